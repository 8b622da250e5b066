package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gmq/gmq/broker/brokertest"
)

// TestBrowserJobHistory drives Chromium against a broker whose topic
// "tickets" keeps its jobs' histories (docs/outcomes.md, "A job's
// history"): a job pushed, popped, failed (an error of markup), popped
// again and acked shows each entry of its history on its page, oldest
// first, as the API gives it, the markup as text; a long history scrolls,
// at its end; a job without one shows no History; the page fits 800 px.
func TestBrowserJobHistory(t *testing.T) {
	tb := openTab(t, 90*time.Second)
	b := brokertest.Fresh(t, nil)
	api := tokenAPI(t, b.URL, "") // the broker needs no token: it ignores the header
	api("PUT", "/topics/tickets/config", `{"job_history": 20, "keep_completed": 3600, "backoff": "fixed", "backoff_base": 0}`)
	api("POST", "/jobs", `{"id":"t-1","topic":"tickets","body":"refund"}`)
	popped := api("POST", "/pop", `{"topics":["tickets"]}`)
	api("POST", "/jobs/t-1/fail", fmt.Sprintf(`{"attempt":%v,"error":%s}`, popped["attempt"], quote(xss))) // backoff 0: ready at once
	popped = api("POST", "/pop", `{"topics":["tickets"]}`)
	api("POST", "/jobs/t-1/ack", fmt.Sprintf(`{"attempt":%v}`, popped["attempt"]))
	api("POST", "/jobs", `{"id":"t-long","topic":"tickets","body":"retried"}`)
	for range 12 { // 25 entries, the last 20 kept
		popped = api("POST", "/pop", `{"topics":["tickets"]}`)
		api("POST", "/jobs/t-long/release", fmt.Sprintf(`{"attempt":%v}`, popped["attempt"]))
	}
	api("POST", "/jobs", `{"id":"plain-1","topic":"plain","body":"x"}`)

	var want []string // each entry as the page is to show it
	var events []string
	for _, e := range api("GET", "/jobs/t-1", "")["history"].([]any) {
		e := e.(map[string]any)
		at, err := time.Parse(time.RFC3339Nano, e["at"].(string))
		must(t, err, "read an entry's time")
		detail, _ := e["detail"].(string)
		want = append(want, strings.Join([]string{e["at"].(string), at.In(kolkata).Format("2006-01-02 15:04:05"),
			e["event"].(string), fmt.Sprintf("attempt %v", e["attempt"]), detail}, "|"))
		events = append(events, e["event"].(string))
	}
	if strings.Join(events, " ") != "pushed reserved failed retried reserved completed" {
		t.Errorf("the broker recorded %v", events)
	}

	tb.do(t, "open the dashboard", chromedp.Navigate(b.URL+"/dashboard/"), chromedp.WaitVisible(`#topics`))
	entries := `[...document.querySelectorAll("#job-history li")]`
	for _, w := range []int64{1400, 800} {
		tb.viewport(t, w)
		tb.open(t, "#/jobs/t-1")
		tb.do(t, fmt.Sprintf("see the job's history at %d px", w),
			poll(text(`#job-fields dd.f-state`)+` === "completed"`),
			poll(`!document.getElementById("job-history-part").hidden`),
			poll(text(`#job-history-count`)+` === "6 entries"`))
		got := eval[[]string](t, tb, entries+`.map(li => [li.querySelector("time").dateTime, ...[...li.children].map(c => c.textContent)].join("|"))`)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("the history shown:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		if tips := eval[[]string](t, tb, entries+`.map(li => li.querySelector("time").title).filter(t => !t.includes("GMT+0530"))`); len(tips) > 0 {
			t.Errorf("entries' tooltips without the full time: %q", tips)
		}
		if eval[bool](t, tb, `document.querySelector("#bold, #job-history b, #job-history script") !== null || window.pwned === 1`) {
			t.Fatal("a failure's error rendered as markup")
		}
		tb.fits(t, "a job with a history")
	}

	tb.open(t, "#/jobs/t-long")
	tb.do(t, "see a long history scroll, at its end",
		poll(text(`#job-history-count`)+` === "20 entries"`),
		poll(text(`#job-history li:last-child .event`)+` === "released"`),
		poll(`(b => b.scrollHeight > b.clientHeight && b.scrollHeight - b.scrollTop - b.clientHeight < 4)(document.getElementById("job-history"))`))
	tb.fits(t, "a job with a long history")
	tb.open(t, "#/jobs/plain-1")
	tb.do(t, "see no history where its topic keeps none",
		poll(text(`#job-fields dd.f-state`)+` === "ready"`),
		poll(`document.getElementById("job-history-part").hidden && `+entries+`.length === 0`))
	tb.healthy(t)
}
