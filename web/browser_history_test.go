package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// TestDashboardDeepLinkAndTopicHistory drives Chromium against a broker
// with a token: a dashboard address opened without a session (#/jobs/ID)
// leads through the login form, a wrong token included, back to that
// page, as does a session that ends while the page is open; and a busy
// topic's sparkline is drawn from the brokers' samples at the page's first
// render, not two refreshes later.
func TestDashboardDeepLinkAndTopicHistory(t *testing.T) {
	tb := openTab(t, 60*time.Second)
	b := brokertest.Fresh(t, func(c *config.Config) { c.Token = "t0ken"; c.HistoryEvery = 200 * time.Millisecond })
	api := tokenAPI(t, b.URL, "t0ken")
	api("POST", "/jobs", `{"id":"deep-1","topic":"deep","body":"linked"}`)
	// A new topic's whole burst comes before its first sample: the topic's
	// birth, counted from zero, is its first point.
	api("POST", "/jobs/batch", `{"jobs":[{"topic":"burst","body":"1"},{"topic":"burst","body":"2"},{"topic":"burst","body":"3"}]}`)
	for i := range 6 { // traffic over more than one sample
		var jobs []string
		for k := range 3 + i {
			jobs = append(jobs, fmt.Sprintf(`{"topic":"busy","body":"%d-%d"}`, i, k))
		}
		api("POST", "/jobs/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`)
		api("POST", "/pop", `{"topics":["busy"],"count":2}`)
		time.Sleep(250 * time.Millisecond)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) { // a minute: only a failure waits it out
		if h := api("GET", "/history?topic=busy", "")["topics"].(map[string]any); len(h["busy"].([]any)) >= 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the brokers sampled no history of the topic")
		}
	}

	t.Run("deep link", func(t *testing.T) { deepLink(t, tb, b.URL) })
	t.Run("topic sparkline at load", func(t *testing.T) { topicSparkAtLoad(t, tb, b.URL) })
	tb.healthy(t)
}

// deepLink opens a job's page with no session: the login form keeps the
// address, through a wrong token, and signing in shows the job. Then the
// session ends (the cookies go): the page's next refresh sends it to the
// login form, and signing in brings it back to the job.
func deepLink(t *testing.T, tb *tab, base string) {
	job := `location.pathname === "/dashboard/" && location.hash === "#/jobs/deep-1" && ` + text("#job-title") + ` === "deep-1"`
	// signIn submits token, then waits for the page it leads to to show
	// shown (a selector) before it checks then in it.
	signIn := func(token, shown string, then chromedp.Action[chromedp.Void]) []chromedp.Action[chromedp.Void] {
		return []chromedp.Action[chromedp.Void]{chromedp.WaitVisible(`input[name="token"]`),
			chromedp.SendKeys(`input[name="token"]`, token), chromedp.Submit(`input[name="token"]`), chromedp.WaitVisible(shown), then}
	}
	tb.do(t, "open a job's address without a session",
		chromedp.Navigate(base+"/dashboard/#/jobs/deep-1"),
		poll(`location.pathname === "/dashboard/login" && document.querySelector('input[name="next"]').value === "#/jobs/deep-1"`))
	tb.do(t, "try a wrong token", signIn("wrong", "p.error",
		poll(text("p.error")+` === "Wrong token." && document.querySelector('input[name="next"]').value === "#/jobs/deep-1"`))...)
	tb.do(t, "sign in and land on the job", signIn("t0ken", "#view-job", poll(job))...)
	_, err := chromedp.Call(tb.ctx, network.ClearBrowserCookies, cdp.Empty{})
	must(t, err, "lose the session")
	tb.do(t, "see the login form for the job's address", chromedp.WaitVisible(`input[name="token"]`),
		poll(`location.pathname === "/dashboard/login" && location.hash === "#/jobs/deep-1"`))
	tb.do(t, "sign in again and land on the job", signIn("t0ken", "#view-job", poll(job))...)
}

// topicSparkAtLoad loads the overview anew and looks at the busy topic's
// row as soon as it is drawn: its sparkline has lines, from samples older
// than the page, and its tooltip says where they came from.
func topicSparkAtLoad(t *testing.T, tb *tab, base string) {
	// WaitVisible first: a poll begun while the page's context is still being
	// replaced fails ("Cannot find context with specified id"), as CI saw.
	tb.do(t, "open the overview anew", chromedp.Navigate("about:blank"), chromedp.Navigate(base+"/dashboard/#/"),
		chromedp.WaitVisible(`#topics`),
		poll(`(svg => svg !== null && (window.firstSpark = {empty: svg.classList.contains("empty"), lines: svg.querySelectorAll("polyline").length, `+
			`title: svg.querySelector("title").textContent, older: topicHistory.get("busy").filter(s => s.t < performance.timeOrigin).length}))`+
			`(document.querySelector('tr[data-topic="busy"] svg.spark'))`))
	got := eval[map[string]any](t, tb, `window.firstSpark`)
	if got["empty"] != false || got["lines"] != 2.0 || got["older"].(float64) < 8 ||
		!strings.HasPrefix(got["title"].(string), "push and pop, last 5 minutes: from the brokers' samples") {
		t.Fatalf("the busy topic's sparkline at its first render: %v", got)
	}
	burst := eval[map[string]any](t, tb, `(h => ({first: h[0].push, most: Math.max(...h.map(s => s.push)), n: h.length}))(topicHistory.get("burst"))`)
	if burst["first"] != 0.0 || burst["most"] != 3.0 {
		t.Fatalf("a topic whose burst came before its first sample: its points start %v, want 0 (its birth), then 3", burst)
	}
}
