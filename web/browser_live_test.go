package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// TestBrowserLive drives Chromium against a broker with a token, signed in
// through its login form, to a topic's live tail (#/topics/T/live): its
// EventSource goes through with the session's cookie, under the
// dashboard's Content-Security-Policy, and shows a job's events as it is
// pushed, popped, reports its progress and is acked with a result of
// markup (as text), the newest first, each job a link to its page; a
// failure's error. The stream closes when the page leaves the tail or is
// hidden or paused, and goes on from its last event after; lost and
// lagging are told; 200 rows at most. A topic without events says so and
// turns them on, asked first. Every page fits 800 px.
func TestBrowserLive(t *testing.T) {
	tb := openTab(t, 120*time.Second)
	b := brokertest.Fresh(t, func(c *config.Config) { c.Token = "t0ken" })
	api := tokenAPI(t, b.URL, "t0ken")
	api("PUT", "/topics/feed/config", `{"events": true}`)
	tb.viewport(t, 1400)
	tb.do(t, "sign in to the live tail",
		chromedp.Navigate(b.URL+"/dashboard/#/topics/feed/live"),
		chromedp.WaitVisible(`input[name="token"]`),
		chromedp.SendKeys(`input[name="token"]`, "t0ken"),
		chromedp.Submit(`input[name="token"]`),
		chromedp.WaitVisible(`#live-list`),
		poll(`location.hash === "#/topics/feed/live" && !document.getElementById("live").hidden`),
		poll(text(`#live-state`)+`.startsWith("live since ")`),
		poll(`document.getElementById("job-list").offsetParent === null && document.getElementById("live-off").hidden`),
		poll(`document.querySelector("#topic-tabs a.on").dataset.state === "live"`))
	tb.atTop(t, "#topic-h")

	t.Run("a job's events", func(t *testing.T) { liveJob(t, tb, api) })
	t.Run("leave, hide, pause", func(t *testing.T) { liveResumes(t, tb, api) })
	t.Run("lost, lagging", func(t *testing.T) { liveNotices(t, tb) })
	t.Run("200 at most", func(t *testing.T) { liveBounded(t, tb, api) })
	t.Run("a topic without events", func(t *testing.T) { liveOff(t, tb, api) })
	t.Run("refused", func(t *testing.T) { liveRefused(t, tb) })
	if eval[bool](t, tb, `window.pwned === 1`) {
		t.Fatal("an event's script ran")
	}
	tb.healthy(t)
}

// liveRows is the JavaScript for the tail's rows as "type id attempt".
const liveRows = `[...document.querySelectorAll("#live-list tbody tr:not(.notice)")].map(tr => ` +
	`[tr.dataset.type, tr.querySelector("td.id").textContent, tr.querySelector("td.attempt").textContent].join(" "))`

// liveJob pushes, pops, reports on and acks a job, and fails another: the
// tail shows each event, newest first.
func liveJob(t *testing.T, tb *tab, api apiFunc) {
	api("POST", "/jobs", `{"id":"live-1","topic":"feed","body":"x"}`)
	j := api("POST", "/pop", `{"topics":["feed"]}`)
	api("POST", "/jobs/live-1/progress", fmt.Sprintf(`{"attempt":%v,"progress":{"page":2,"of":3}}`, j["attempt"]))
	api("POST", "/jobs/live-1/ack", fmt.Sprintf(`{"attempt":%v,"result":{"html":%s}}`, j["attempt"], quote(xss)))
	tb.do(t, "see the job's events",
		poll(liveRows+`.join(",") === "completed live-1 1,progress live-1 1,reserved live-1 1,pushed live-1 0"`))
	row := func(ty string) string { return `#live-list tr[data-type="` + ty + `"] ` }
	tb.do(t, "see what each carries, as text",
		poll(text(row("completed")+`td.carried`)+` === JSON.stringify({html: `+quote(xss)+`})`),
		poll(text(row("progress")+`td.carried`)+` === '{"page":2,"of":3}'`),
		poll(text(row("pushed")+`td.carried`)+` === ""`),
		poll(`/^by \S+$/.test(`+text(row("reserved")+`td.carried`)+`)`), // the broker that handed it out
		poll(`document.querySelector(`+quote(row("completed")+`td.id a`)+`).getAttribute("href") === "#/jobs/live-1"`),
		poll(`/^\d\d:\d\d:\d\d\.\d{3}$/.test(`+text(row("completed")+`td.at`)+`)`))
	if eval[bool](t, tb, `document.querySelector("#bold, #live-list b, #live-list script") !== null`) {
		t.Fatal("a result rendered as markup")
	}

	api("POST", "/jobs", `{"id":"live-2","topic":"feed","body":"y","retry":{"max_attempts":1}}`)
	j = api("POST", "/pop", `{"topics":["feed"]}`)
	api("POST", "/jobs/live-2/fail", fmt.Sprintf(`{"attempt":%v,"error":"smtp 550 <b>no</b>"}`, j["attempt"]))
	tb.do(t, "see a failure's error", poll(`[...document.querySelectorAll('#live-list tr[data-type="failed"], #live-list tr[data-type="dead"]')]`+
		`.some(tr => tr.querySelector("td.id").textContent === "live-2" && tr.querySelector("td.carried").textContent === "smtp 550 <b>no</b>")`))
	for _, w := range []int64{1400, 800} {
		tb.viewport(t, w)
		tb.fits(t, fmt.Sprintf("the live tail at %d px", w))
	}
	tb.viewport(t, 1400)
}

// liveResumes leaves the tail for a job's page and comes back, hides the
// page and shows it again, pauses and resumes: closed each time, and what
// happened meanwhile comes after.
func liveResumes(t *testing.T, tb *tab, api apiFunc) {
	tb.do(t, "open a job from the tail",
		chromedp.Click(`#live-list tr[data-type="completed"] td.id a`),
		poll(`location.hash === "#/jobs/live-1" && !document.getElementById("view-job").hidden`),
		poll(`live.source === null`))
	api("POST", "/jobs", `{"id":"away-1","topic":"feed","body":"x"}`)
	tb.do(t, "come back to the tail: what came meanwhile shows",
		chromedp.Evaluate[chromedp.Void](`history.back()`),
		poll(`location.hash === "#/topics/feed/live"`),
		poll(liveRows+`[0] === "pushed away-1 0" && `+liveRows+`.includes("completed live-1 1")`),
		poll(`live.source !== null && `+text(`#live-state`)+`.startsWith("live since ")`))

	hide := `Object.defineProperty(document, "hidden", {value: true, configurable: true}); ` +
		`Object.defineProperty(document, "visibilityState", {value: "hidden", configurable: true}); ` +
		`document.dispatchEvent(new Event("visibilitychange"))`
	show := `delete document.hidden; delete document.visibilityState; document.dispatchEvent(new Event("visibilitychange"))`
	tb.do(t, "hide the page", chromedp.Evaluate[chromedp.Void](hide),
		poll(`live.source === null && `+text(`#live-state`)+` === "paused while the page is hidden"`))
	api("POST", "/jobs", `{"id":"hidden-1","topic":"feed","body":"x"}`)
	time.Sleep(200 * time.Millisecond) // an open stream would have shown it by now
	if got := eval[string](t, tb, liveRows+`[0]`); got != "pushed away-1 0" {
		t.Fatalf("a hidden page's tail shows %q", got)
	}
	tb.do(t, "show the page again", chromedp.Evaluate[chromedp.Void](show),
		poll(liveRows+`[0] === "pushed hidden-1 0"`), poll(text(`#live-state`)+`.startsWith("live since ")`))

	tb.do(t, "pause", chromedp.Click(`#live-pause`),
		poll(`live.source === null && `+text(`#live-pause`)+` === "Resume"`),
		poll(text(`#live-state`)+` === "paused: Resume goes on from the last event"`))
	api("POST", "/jobs", `{"id":"paused-1","topic":"feed","body":"x"}`)
	tb.do(t, "resume", chromedp.Click(`#live-pause`),
		poll(liveRows+`[0] === "pushed paused-1 0" && `+text(`#live-pause`)+` === "Pause"`))
	if n := eval[int](t, tb, liveRows+`.filter(r => r === "pushed live-1 0").length`); n != 1 {
		t.Errorf("the job's push shows %d times after the stream was opened again, want once", n)
	}
}

// liveNotices asks for a position the topic's bucket no longer holds (lost),
// and tells the page it fell behind (lagging, as the broker would).
func liveNotices(t *testing.T, tb *tab) {
	tb.do(t, "resume from a position long gone",
		chromedp.Click(`#live-pause`), poll(`live.source === null`),
		chromedp.Evaluate[chromedp.Void](`live.last = live.last.split(":")[0] + ":1-0"`),
		chromedp.Click(`#live-pause`),
		poll(`(tr => tr !== null && tr.textContent.includes("Events were missed: "))(document.querySelector('#live-list tr.notice[data-notice="lost"]'))`))
	tb.do(t, "fall behind",
		chromedp.Evaluate[chromedp.Void](`live.source.dispatchEvent(new MessageEvent("lagging", {data: JSON.stringify({error: "<i>64 events</i> unread"})}))`),
		poll(text(`#live-list tr.notice[data-notice="lagging"] td.said`)+
			` === "This page fell behind: <i>64 events</i> unread. It goes on from the last event."`))
	tb.fits(t, "the live tail's notices")
}

// liveBounded pushes 230 jobs, one after another: the tail keeps the
// newest 200.
func liveBounded(t *testing.T, tb *tab, api apiFunc) {
	for i := range 230 {
		api("POST", "/jobs", fmt.Sprintf(`{"id":"bulk-%03d","topic":"feed","body":"%d"}`, i, i))
	}
	tb.do(t, "see the newest 200",
		poll(liveRows+`[0] === "pushed bulk-229 0"`),
		poll(`document.querySelectorAll("#live-list tbody tr").length === 200`),
		poll(liveRows+`[199] === "pushed bulk-030 0"`))
}

// liveRefused opens the tail on a broker of the same Redis with room for
// one waiting consumer ([jobs] max_waiting 1, and no token), while a long
// poll holds it: the tail says why its stream was refused, and opens it
// once the poll is over.
func liveRefused(t *testing.T, tb *tab) {
	b := brokertest.Start(t, brokertest.Redis(), func(c *config.Config) { c.MaxWaiting = 1 })
	api := tokenAPI(t, b.URL, "")
	tb.do(t, "open the dashboard of a broker with room for one", chromedp.Navigate(b.URL+"/dashboard/"), chromedp.WaitVisible(`#topics`))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.Get(b.URL + "/api/v1/pop?topic=nothing&timeout=2"); err == nil {
			resp.Body.Close()
		}
	}()
	defer func() { <-done }()
	for deadline := time.Now().Add(5 * time.Second); api("GET", "/stats", "")["current_waiting"] != 1.0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the long poll never waited")
		}
	}
	tb.open(t, "#/topics/feed/live")
	tb.do(t, "see the stream refused, then open",
		poll(`/^the broker refused the stream: .*max_waiting.*: opening it again in 1 s$/.test(`+text(`#live-state`)+`)`),
		poll(text(`#live-state`)+`.startsWith("live since ")`))
}

// liveOff opens the tail of a topic without events, and with no job yet
// (no counts, only settings): it says so, and turns them on, asked first;
// then its events show.
func liveOff(t *testing.T, tb *tab, api apiFunc) {
	for _, w := range []int64{800, 1400} {
		tb.viewport(t, w)
		tb.open(t, "#/topics/quiet/live")
		tb.do(t, "see that the topic streams nothing",
			poll(`!document.getElementById("live-off").hidden && `+text(`#live-off-text`)+
				`.startsWith("This topic streams nothing: set events = true (PUT /api/v1/topics/quiet/config")`),
			poll(`document.querySelectorAll("#live-list tbody tr").length === 0 && !document.getElementById("live-empty").hidden`),
			poll(text(`#topic-error`)+` === "" && `+text(`#topic-tabs a[data-state="ready"] .n`)+` === ""`),
			poll(text(`#live-state`)+`.startsWith("live since ")`)) // its stream is open all the same
		tb.fits(t, fmt.Sprintf("a tail that streams nothing at %d px", w))
	}
	tb.do(t, "turn events on", chromedp.Click(`#live-events-on`), poll(`document.getElementById("live-off").hidden`))
	if asked := tb.lastDialog(); !strings.HasPrefix(asked, "Turn events on for quiet?") {
		t.Errorf("turning events on asked %q", asked)
	}
	if s := api("GET", "/topics/quiet/config", "")["settings"].(map[string]any); s["events"] != true {
		t.Fatalf("quiet's settings after turning events on: %v", s)
	}
	api("POST", "/jobs", `{"id":"quiet-1","topic":"quiet","body":"x"}`)
	tb.do(t, "see its events and counts",
		poll(liveRows+`[0] === "pushed quiet-1 0"`),
		poll(text(`#topic-tabs a[data-state="ready"] .n`)+` === "1"`))
}
