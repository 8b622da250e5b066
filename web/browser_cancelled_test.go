package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gmq/gmq/broker/brokertest"
)

// TestBrowserCancelled drives Chromium against a broker whose topic "jobs"
// keeps its ended jobs (docs/outcomes.md, Cancelling): a waiting job
// cancelled from its page ends at once and shows in the topic's cancelled
// list; a reserved one is marked cancelling until its consumer next
// reports; a job's progress and log (a line of markup among them) show as
// text, the log in a box that scrolls; a cancelled job is pushed again
// from its page, from its row and all at once, and deleted all at once,
// each asked first. The overview counts them; every page fits 800 px.
func TestBrowserCancelled(t *testing.T) {
	tb := openTab(t, 120*time.Second)
	b := brokertest.Fresh(t, nil)
	api := tokenAPI(t, b.URL, "") // the broker needs no token: it ignores the header
	api("PUT", "/topics/jobs/config", `{"keep_completed": 3600}`)
	api("POST", "/jobs", `{"id":"held-1","topic":"jobs","body":"export"}`)
	held := api("POST", "/pop", `{"topics":["jobs"]}`)
	if held["id"] != "held-1" {
		t.Fatalf("popped %v, want held-1", held["id"])
	}
	api("POST", "/jobs", `{"id":"wait-1","topic":"jobs","body":{"user":42}}`)
	api("POST", "/jobs", `{"id":"later-1","topic":"jobs","body":"later","delay":600}`)
	report := func(body string) (int, string) {
		code, data, _ := ask(t, "POST", b.URL+"/api/v1/jobs/held-1/progress",
			fmt.Sprintf(`{"attempt":%v,%s}`, held["attempt"], body), "Content-Type", "application/json")
		return code, data
	}
	for i := 1; i <= 30; i++ {
		line := fmt.Sprintf("page %d of 30", i)
		if i == 15 {
			line = xss
		}
		if code, data := report(fmt.Sprintf(`"progress":{"rows":%d,"of":12000},"log":%s`, i*400, quote(line))); code != 200 {
			t.Fatalf("progress %d: %d %s", i, code, data)
		}
	}
	api("POST", "/jobs", `{"id":"gone-1","topic":"plain","body":"x"}`) // a topic that keeps none
	// A buried job: its topic's row shows its widest button.
	api("POST", "/jobs", `{"topic":"parcels","body":"z"}`)
	api("POST", "/jobs/"+api("POST", "/pop", `{"topics":["parcels"]}`)["id"].(string)+"/bury", ``)

	tb.do(t, "open the dashboard", chromedp.Navigate(b.URL+"/dashboard/"), chromedp.WaitVisible(`#topics`))
	t.Run("cancel a waiting job", func(t *testing.T) { cancelWaiting(t, tb, api) })
	t.Run("cancel a reserved job", func(t *testing.T) { cancelReserved(t, tb, api, report) })
	t.Run("cancel a job not kept", func(t *testing.T) { cancelNotKept(t, tb) })
	for _, w := range []int64{1400, 800} {
		tb.viewport(t, w)
		t.Run(fmt.Sprintf("%dpx", w), func(t *testing.T) { cancelledPages(t, tb) })
	}
	tb.viewport(t, 1400)
	t.Run("push again, delete all", func(t *testing.T) { cancelledAgain(t, tb, api) })
	if eval[bool](t, tb, `window.pwned === 1`) {
		t.Fatal("a log line's script ran")
	}
	tb.healthy(t)
}

// cancelWaiting cancels a ready job from its page (asked first): it ends
// cancelled at once and is listed among the topic's cancelled jobs.
func cancelWaiting(t *testing.T, tb *tab, api apiFunc) {
	tb.open(t, "#/jobs/wait-1")
	tb.do(t, "cancel a ready job from its page",
		poll(text(`#job-fields dd.f-state`)+` === "ready" && !document.getElementById("job-cancel").hidden`),
		poll(`document.getElementById("job-again").hidden && document.getElementById("job-note").hidden`),
		chromedp.Click(`#job-cancel`),
		poll(text(`#job-note`)+` === "Cancelled: job wait-1 will not run."`),
		poll(text(`#job-fields dd.f-state`)+` === "cancelled"`),
		poll(`/^\d{4}-\d\d-\d\d \d\d:\d\d \(\d+ s ago\)$/.test(`+text(`#job-fields dd.f-cancelled`)+`)`),
		poll(`document.getElementById("job-cancel").hidden && !document.getElementById("job-again").hidden`))
	if asked := tb.lastDialog(); asked != "Cancel ready job wait-1? It ends cancelled now, and will not run." {
		t.Errorf("cancel asked %q", asked)
	}
	if got := api("GET", "/jobs/wait-1", ""); got["state"] != "cancelled" {
		t.Fatalf("the job cancelled from its page: %v", got)
	}
	tb.do(t, "see it among the topic's cancelled jobs",
		chromedp.Click(`#job-fields dd.f-state a`),
		poll(`location.hash === "#/topics/jobs/cancelled"`),
		poll(`document.querySelector('#job-list tr[data-id="wait-1"]') !== null`),
		poll(text(`#topic-tabs a.on[data-state="cancelled"] .n`)+` === "1"`),
		poll(text(`#job-list tr[data-id="wait-1"] td.body`)+` === '{"user":42}'`),
		poll(text(`#job-list tr[data-id="wait-1"] td.attempt`)+` === "0"`), // never popped
		poll(text(`#job-list tr[data-id="wait-1"] td.progress`)+` === "–"`),
		poll(`!document.getElementById("cancelled-actions").hidden && document.getElementById("completed-actions").hidden`))
	heads := eval[[]string](t, tb, `[...document.querySelectorAll("#job-list thead th")].map(th => th.textContent)`)
	if strings.Join(heads, ",") != "id,attempt,cancelled,progress,body," {
		t.Errorf("the cancelled list's columns: %q", heads)
	}

	tb.open(t, "#/jobs/later-1")
	tb.do(t, "cancel a delayed job from its page",
		poll(text(`#job-fields dd.f-state`)+` === "delayed"`),
		chromedp.Click(`#job-cancel`),
		poll(text(`#job-fields dd.f-state`)+` === "cancelled"`))
	if asked := tb.lastDialog(); asked != "Cancel delayed job later-1? It ends cancelled now, and will not run." {
		t.Errorf("cancel asked %q", asked)
	}
}

// cancelReserved reads a reserved job's progress and log (markup as text,
// a long log scrolling, at its end), cancels it (asked first): it stays
// reserved, marked cancelling, until its consumer's next report, which is
// told 410; then it is cancelled, its progress and log still shown.
func cancelReserved(t *testing.T, tb *tab, api apiFunc, report func(string) (int, string)) {
	tb.open(t, "#/jobs/held-1")
	lines := `[...document.querySelectorAll("#job-log li")]`
	tb.do(t, "see the job's progress and its log",
		poll(text(`#job-fields dd.f-state`)+` === "reserved"`),
		poll(text(`#job-progress`)+` === JSON.stringify({rows: 12000, of: 12000}, null, 2)`),
		poll(text(`#job-log-count`)+` === "30 lines"`),
		poll(lines+`.length === 30`),
		poll(text(`#job-log li:first-child .line`)+` === "page 1 of 30"`),
		poll(text(`#job-log li:nth-child(15) .line`)+` === `+quote(xss)),
		poll(`/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(`+text(`#job-log li .at`)+`)`),
		poll(`(b => b.scrollHeight > b.clientHeight && b.scrollHeight - b.scrollTop - b.clientHeight < 4)(document.getElementById("job-log"))`),
		poll(`document.querySelector("#job-fields dd.f-cancelling") === null`))
	if eval[bool](t, tb, `document.querySelector("#bold, #job-log b, #job-log script") !== null || window.pwned === 1`) {
		t.Fatal("a log line rendered as markup")
	}
	tb.fits(t, "a job with a log")

	tb.do(t, "cancel the reserved job",
		chromedp.Click(`#job-cancel`),
		poll(text(`#job-note`)+` === "Cancelling: job held-1 ends when its consumer next reports."`),
		poll(text(`#job-fields dd.f-state`)+` === "reserved"`),
		poll(text(`#job-fields dd.f-cancelling`)+` === "yes: ends when its consumer next reports"`),
		poll(`document.getElementById("job-cancel").hidden && document.getElementById("job-again").hidden`))
	if asked := tb.lastDialog(); asked != "Cancel job held-1? A consumer has it: it ends cancelled when its consumer next touches, reports on or acks it." {
		t.Errorf("cancel asked %q", asked)
	}
	if got := api("GET", "/jobs/held-1", ""); got["state"] != "reserved" || got["cancelling"] != true {
		t.Fatalf("the reserved job cancelled: %v", got)
	}
	tb.open(t, "#/topics/jobs/reserved")
	tb.do(t, "see it marked cancelling in the reserved list",
		poll(text(`#job-list tr[data-id="held-1"] td.id .cancelling`)+` === "cancelling"`))
	tb.fits(t, "the reserved jobs")

	if code, data := report(`"log":"page 31"`); code != 410 {
		t.Fatalf("the consumer's next report: %d %s, want 410", code, data)
	}
	tb.open(t, "#/jobs/held-1")
	tb.do(t, "see it cancelled, its progress and log kept",
		poll(text(`#job-fields dd.f-state`)+` === "cancelled"`),
		poll(`document.querySelector("#job-fields dd.f-cancelling") === null && document.getElementById("job-note").hidden`),
		poll(text(`#job-progress`)+` === JSON.stringify({rows: 12000, of: 12000}, null, 2)`),
		poll(lines+`.length === 30`),
		poll(`!document.getElementById("job-again").hidden && document.getElementById("job-cancel").hidden`))
}

// cancelNotKept cancels a job of a topic that keeps none: the page says
// it is gone.
func cancelNotKept(t *testing.T, tb *tab) {
	tb.open(t, "#/jobs/gone-1")
	tb.do(t, "cancel a job its topic does not keep",
		poll(text(`#job-fields dd.f-state`)+` === "ready"`),
		chromedp.Click(`#job-cancel`),
		poll(text(`#job-note`)+` === "Cancelled: job gone-1 will not run. Its topic keeps no cancelled job (keep_completed 0), so it is gone."`),
		poll(`document.getElementById("job-found").hidden && `+text(`#job-error`)+` !== ""`))
	tb.open(t, "#/topics/plain/cancelled")
	tb.do(t, "see why a topic that keeps none has none",
		poll(text(`#jobs-empty`)+` === "plain has no cancelled job. Its keep_completed is 0: a cancel deletes its job, unless the push asked to keep it (docs/outcomes.md)."`),
		poll(`document.getElementById("cancelled-actions").hidden`))
}

// cancelledPages checks the overview's counts, opens the cancelled jobs
// from the topic's row, and checks the pages fit.
func cancelledPages(t *testing.T, tb *tab) {
	tb.open(t, "#/")
	tb.do(t, "see the cancelled counts on the overview",
		poll(text(`tr[data-topic="jobs"] td.cancelled`)+` === "3"`),
		poll(text(`tr[data-topic="plain"] td.cancelled`)+` === "0"`),
		poll(text(`#s-cancelled`)+` === "3"`),
		poll(text(`#s-end-waits`)+` === "0"`))
	heads := eval[[]string](t, tb, `[...document.querySelectorAll("#topics thead th")].map(th => th.textContent)`)
	if !strings.Contains(strings.Join(heads, ","), "dead,completed,cancelled,latency") {
		t.Errorf("the topics' columns: %q", heads)
	}
	tb.fits(t, "the overview")
	tb.do(t, "open the cancelled jobs from the topic's row",
		chromedp.Click(`tr[data-topic="jobs"] td.cancelled a`),
		poll(`location.hash === "#/topics/jobs/cancelled"`),
		poll(`document.querySelectorAll("#job-list tbody tr").length === 3`))
	tb.atTop(t, "#topic-h")
	rows := eval[[]string](t, tb, `[...document.querySelectorAll("#job-list tbody tr")].map(tr => tr.dataset.id)`)
	if strings.Join(rows, " ") != "held-1 later-1 wait-1" {
		t.Errorf("the cancelled jobs listed %v, want the newest first", rows)
	}
	tb.do(t, "see a cancelled job's progress, compact, and when it was cancelled",
		poll(text(`#job-list tr[data-id="held-1"] td.progress`)+` === '{"rows":12000,"of":12000}'`),
		poll(`/^\d{4}-\d\d-\d\d \d\d:\d\d \(\d+ (s|min) ago\)$/.test(`+text(`#job-list tr[data-id="held-1"] td.cancelled-at`)+`)`))
	tb.fits(t, "the cancelled jobs")
	tb.open(t, "#/jobs/held-1")
	tb.do(t, "see the cancelled job's page", poll(text(`#job-log-count`)+` === "30 lines"`))
	tb.fits(t, "a cancelled job")
}

// cancelledAgain pushes cancelled jobs again from a job's page, from a row
// and all at once, then deletes them all, each asked first.
func cancelledAgain(t *testing.T, tb *tab, api apiFunc) {
	tb.open(t, "#/jobs/wait-1")
	tb.do(t, "push a cancelled job again from its page",
		poll(text(`#job-fields dd.f-state`)+` === "cancelled"`),
		chromedp.Click(`#job-again`),
		poll(text(`#job-fields dd.f-state`)+` === "ready"`),
		poll(`document.getElementById("job-again").hidden && !document.getElementById("job-cancel").hidden`),
		poll(`document.querySelector("#job-fields dd.f-cancelled") === null`))
	if asked := tb.lastDialog(); asked != "Push cancelled job wait-1 again? It becomes ready, to run after all." {
		t.Errorf("push again asked %q", asked)
	}
	if got := api("GET", "/jobs/wait-1", ""); got["state"] != "ready" {
		t.Errorf("the job pushed again: %v", got)
	}
	tb.open(t, "#/topics/jobs/cancelled")
	tb.do(t, "push a cancelled job again from its row",
		poll(`document.querySelector('#job-list tr[data-id="later-1"]') !== null`),
		chromedp.Click(`#job-list tr[data-id="later-1"] button.again`),
		poll(`!document.querySelector('#job-list tr[data-id="later-1"]')`),
		poll(text(`#topic-tabs a[data-state="cancelled"] .n`)+` === "1"`))
	if asked := tb.lastDialog(); asked != "Push cancelled job later-1 again? It becomes ready, to run after all." {
		t.Errorf("push again from a row asked %q", asked)
	}
	if got := api("GET", "/jobs/later-1", ""); got["state"] != "ready" {
		t.Errorf("the job pushed again from its row: %v", got)
	}
	tb.do(t, "push them all again",
		chromedp.Click(`#cancelled-retry-all`),
		poll(`!document.getElementById("jobs-empty").hidden && `+text(`#jobs-empty`)+`.startsWith("jobs has no cancelled job.")`),
		poll(`document.getElementById("cancelled-actions").hidden`))
	if asked := tb.lastDialog(); asked != "Push every cancelled job of jobs again? They become ready, to run after all." {
		t.Errorf("push all again asked %q", asked)
	}
	if got := api("GET", "/topics/jobs", ""); got["ready"] != 3.0 || got["cancelled"] != 0.0 {
		t.Fatalf("jobs after push all again: %v", got)
	}
	for _, id := range []string{"wait-1", "later-1", "held-1"} {
		api("POST", "/jobs/"+id+"/cancel", ``)
	}
	tb.do(t, "delete them all",
		poll(text(`#topic-tabs a[data-state="cancelled"] .n`)+` === "3"`),
		poll(`document.querySelectorAll("#job-list tbody tr").length === 3`),
		chromedp.Click(`#cancelled-delete-all`),
		poll(`!document.getElementById("jobs-empty").hidden && `+text(`#jobs-empty`)+`.startsWith("jobs has no cancelled job.")`))
	if asked := tb.lastDialog(); asked != "Delete every cancelled job of jobs? This cannot be undone." {
		t.Errorf("delete all asked %q", asked)
	}
	if got := api("GET", "/topics/jobs", ""); got["ready"] != 0.0 || got["cancelled"] != 0.0 {
		t.Fatalf("jobs after delete all: %v", got)
	}
}
