package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gmq/gmq/broker/brokertest"
)

// TestBrowserCompleted drives Chromium against a broker whose topics keep
// their acked jobs (docs/outcomes.md): the overview counts them, a topic's
// completed list shows each with its result (newest first, paged), a job's
// page shows its state, completion, own keep_completed and result; push
// again (from a row, a job's page, or all at once) makes them ready and
// delete all removes them, each asked first. A result of markup shows as
// text, at 1,400 and 800 px wide.
func TestBrowserCompleted(t *testing.T) {
	tb := openTab(t, 100*time.Second)
	b := brokertest.Fresh(t, nil)
	api := tokenAPI(t, b.URL, "") // the broker needs no token: it ignores the header
	api("PUT", "/topics/reports/config", `{"keep_completed": 3600}`)
	complete(t, api, "reports", "report-1", `{"user":42}`, `{"url":"/r/1.pdf","pages":7}`)
	complete(t, api, "reports", "hostile-r", `"x"`, `{"html":`+quote(xss)+`}`)
	complete(t, api, "reports", "r-none", `"y"`, ``)
	api("POST", "/jobs", `{"topic":"plain","body":"z"}`) // a topic that keeps none, with a buried job (its row's widest button)
	api("POST", "/jobs/"+api("POST", "/pop", `{"topics":["plain"]}`)["id"].(string)+"/bury", ``)

	tb.do(t, "open the dashboard", chromedp.Navigate(b.URL+"/dashboard/"), chromedp.WaitVisible(`#topics`))
	for _, w := range []int64{1400, 800} {
		tb.viewport(t, w)
		t.Run(fmt.Sprintf("%dpx", w), func(t *testing.T) { completedList(t, tb) })
	}
	tb.viewport(t, 1400)
	t.Run("job page", func(t *testing.T) { completedJobPage(t, tb, api) })
	t.Run("push again", func(t *testing.T) { pushAgain(t, tb, api) })
	t.Run("paged, all at once", func(t *testing.T) { completedPages(t, tb, api) })
	if eval[bool](t, tb, `window.pwned === 1`) {
		t.Fatal("a result's script ran")
	}
	tb.healthy(t)
}

// complete pushes a job, pops it and acks it with result ("": none).
func complete(t *testing.T, api apiFunc, topic, id, body, result string) {
	t.Helper()
	api("POST", "/jobs", fmt.Sprintf(`{"id":%q,"topic":%q,"body":%s}`, id, topic, body))
	j := api("POST", "/pop", fmt.Sprintf(`{"topics":[%q]}`, topic))
	if j["id"] != id {
		t.Fatalf("popped %v, want %s", j, id)
	}
	ack := fmt.Sprintf(`{"attempt":%v`, j["attempt"])
	if result != "" {
		ack += `,"result":` + result
	}
	api("POST", "/jobs/"+id+"/ack", ack+`}`)
	time.Sleep(5 * time.Millisecond) // the next ack completes later: newest first is an order
}

// completedList checks the overview's counts, opens reports' completed
// jobs from its row and reads them: results compact and as text.
func completedList(t *testing.T, tb *tab) {
	tb.open(t, "#/")
	tb.do(t, "see the completed counts on the overview",
		poll(text(`tr[data-topic="reports"] td.completed`)+` === "3"`),
		poll(text(`#s-completed`)+` === "3"`),
		poll(`(`+text(`tr[data-topic="reports"] .limits`)+` || "").includes("keeps completed 3600s")`))
	tb.fits(t, "the overview")
	tb.do(t, "open the completed jobs from the topic's row",
		chromedp.Click(`tr[data-topic="reports"] td.completed a`),
		poll(`location.hash === "#/topics/reports/completed"`),
		poll(`document.querySelectorAll("#job-list tbody tr").length === 3`),
		poll(text(`#topic-tabs a.on[data-state="completed"] .n`)+` === "3"`))
	tb.atTop(t, "#topic-h")
	rows := eval[[]string](t, tb, `[...document.querySelectorAll("#job-list tbody tr")].map(tr => tr.dataset.id)`)
	if strings.Join(rows, " ") != "r-none hostile-r report-1" {
		t.Errorf("the completed jobs listed %v, want the newest first", rows)
	}
	heads := eval[[]string](t, tb, `[...document.querySelectorAll("#job-list thead th")].map(th => th.textContent)`)
	if strings.Join(heads, ",") != "id,attempt,completed,result,body," {
		t.Errorf("the completed list's columns: %q", heads)
	}
	row := func(id, col string) string { return text(`#job-list tr[data-id="` + id + `"] td.` + col) }
	tb.do(t, "see each job's result, completion and body",
		poll(row("report-1", "result")+` === '{"url":"/r/1.pdf","pages":7}'`),
		poll(row("report-1", "body")+` === '{"user":42}'`),
		poll(row("report-1", "attempt")+` === "1"`),
		poll(`/^\d{4}-\d\d-\d\d \d\d:\d\d \(\d+ (s|min) ago\)$/.test(`+row("report-1", "completed-at")+`)`),
		poll(row("r-none", "result")+` === "–"`),
		poll(row("hostile-r", "result")+` === JSON.stringify({html: `+quote(xss)+`})`),
		poll(`!document.getElementById("completed-actions").hidden && document.getElementById("dead-actions").hidden`))
	injected := `document.querySelector("#bold, #job-list td.result b, #job-list td.result script") !== null || window.pwned === 1`
	if eval[bool](t, tb, injected) {
		t.Fatal("a result rendered as markup")
	}
	tb.fits(t, "the completed jobs")
	tb.open(t, "#/topics/plain/completed")
	tb.do(t, "see why a topic that keeps none has none",
		poll(text(`#jobs-empty`)+` === "plain has no completed job. Its keep_completed is 0: an ack deletes its job, unless the ack gave a result (kept for keep_results) or the push asked to keep it (docs/outcomes.md)."`),
		poll(`document.getElementById("completed-actions").hidden`))
}

// completedJobPage opens completed jobs' pages: state, completion, result
// indented, none, markup as text, a job's own keep_completed.
func completedJobPage(t *testing.T, tb *tab, api apiFunc) {
	tb.open(t, "#/topics/reports/completed")
	tb.do(t, "open a completed job from its row",
		chromedp.Click(`#job-list tr[data-id="report-1"] td.id a`),
		poll(`location.hash === "#/jobs/report-1"`),
		poll(text(`#job-fields dd.f-state`)+` === "completed"`),
		poll(`/^\d{4}-\d\d-\d\d \d\d:\d\d \(\d+ (s|min) ago\)$/.test(`+text(`#job-fields dd.f-completed`)+`)`),
		poll(text(`#job-result`)+` === JSON.stringify({url: "/r/1.pdf", pages: 7}, null, 2)`),
		poll(`document.getElementById("job-no-result").hidden && !document.getElementById("job-again").hidden && `+
			`document.getElementById("job-retry").hidden && document.getElementById("job-kick").hidden`),
		poll(`document.querySelector("#job-fields dd.f-keep-completed") === null`))
	tb.atTop(t, "#job-h")
	tb.fits(t, "a completed job")

	tb.open(t, "#/jobs/hostile-r")
	tb.do(t, "see a result of markup as text",
		poll(text(`#job-result`)+` === JSON.stringify({html: `+quote(xss)+`}, null, 2)`),
		poll(`document.getElementById("job-result").children.length === 0 && document.querySelector("#bold") === null`))
	tb.open(t, "#/jobs/r-none")
	tb.do(t, "see a job completed with no result",
		poll(text(`#job-fields dd.f-state`)+` === "completed"`),
		poll(`!document.getElementById("job-outcome").hidden && document.getElementById("job-result").hidden && `+
			`!document.getElementById("job-no-result").hidden`))

	api("POST", "/jobs", `{"id":"own-1","topic":"mail","body":"hi","keep_completed":60}`)
	tb.open(t, "#/jobs/own-1")
	tb.do(t, "see a pending job: no result, no push again",
		poll(text(`#job-fields dd.f-state`)+` === "ready" && `+text(`#job-fields dd.f-keep-completed`)+` === "60s"`),
		poll(`document.getElementById("job-outcome").hidden && document.getElementById("job-again").hidden`))
	j := api("POST", "/pop", `{"topics":["mail"]}`)
	api("POST", "/jobs/own-1/ack", fmt.Sprintf(`{"attempt":%v,"result":"sent"}`, j["attempt"]))
	tb.do(t, "see a job's own keep_completed and its result",
		poll(text(`#job-fields dd.f-state`)+` === "completed" && `+text(`#job-result`)+` === '"sent"'`),
		poll(text(`#job-fields dd.f-keep-completed`)+` === "60s"`))
}

// pushAgain pushes completed jobs again from a job's page and from a row:
// each asked first, each ready after, its result forgotten.
func pushAgain(t *testing.T, tb *tab, api apiFunc) {
	tb.open(t, "#/jobs/report-1")
	tb.do(t, "push a completed job again from its page",
		poll(text(`#job-fields dd.f-state`)+` === "completed"`),
		chromedp.Click(`#job-again`),
		poll(text(`#job-fields dd.f-state`)+` === "ready"`),
		poll(`document.getElementById("job-outcome").hidden && document.getElementById("job-again").hidden`))
	if asked := tb.lastDialog(); asked != "Push completed job report-1 again? It becomes ready, its result forgotten." {
		t.Errorf("push again asked %q", asked)
	}
	if got := api("GET", "/jobs/report-1", ""); got["state"] != "ready" || got["result"] != nil {
		t.Errorf("the job pushed again: %v", got)
	}
	tb.open(t, "#/topics/reports/completed")
	tb.do(t, "push a completed job again from its row",
		poll(`document.querySelector('#job-list tr[data-id="hostile-r"]') !== null`),
		chromedp.Click(`#job-list tr[data-id="hostile-r"] button.again`),
		poll(`!document.querySelector('#job-list tr[data-id="hostile-r"]')`),
		poll(text(`#topic-tabs a[data-state="completed"] .n`)+` === "1" && `+text(`#topic-tabs a[data-state="ready"] .n`)+` === "2"`))
	if got := api("GET", "/jobs/hostile-r", ""); got["state"] != "ready" || got["result"] != nil {
		t.Errorf("the job pushed again from its row: %v", got)
	}
}

// completedPages pages through 55 completed jobs, pushes them all again,
// completes them anew and deletes them all.
func completedPages(t *testing.T, tb *tab, api apiFunc) {
	var jobs []string
	for i := range 55 {
		jobs = append(jobs, fmt.Sprintf(`{"id":"b-%02d","topic":"bulk","body":"%d","keep_completed":600}`, i, i))
	}
	api("POST", "/jobs/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`)
	ackAll := func() {
		var acks []string
		for _, j := range api("POST", "/pop", `{"topics":["bulk"],"count":55}`)["jobs"].([]any) {
			j := j.(map[string]any)
			acks = append(acks, fmt.Sprintf(`{"id":%q,"attempt":%v,"result":{"n":%q}}`, j["id"], j["attempt"], j["body"]))
		}
		if len(acks) != 55 {
			t.Fatalf("popped %d jobs of bulk, want 55", len(acks))
		}
		api("POST", "/ack", `{"jobs":[`+strings.Join(acks, ",")+`]}`)
	}
	ackAll()
	tb.open(t, "#/topics/bulk/completed")
	tb.do(t, "page through the completed jobs",
		poll(text("#jobs-pager .range")+` === "1–50 of 55 · page 1 of 2"`),
		chromedp.Click(`#jobs-pager a.next`),
		poll(`location.hash === "#/topics/bulk/completed?page=2"`),
		poll(text("#jobs-pager .range")+` === "51–55 of 55 · page 2 of 2"`),
		poll(`document.querySelectorAll("#job-list tbody tr").length === 5`))
	tb.do(t, "push them all again",
		chromedp.Click(`#completed-retry-all`),
		poll(`!document.getElementById("jobs-empty").hidden && `+text(`#jobs-empty`)+`.startsWith("bulk has no completed job.")`),
		poll(`document.getElementById("completed-actions").hidden`))
	if asked := tb.lastDialog(); asked != "Push every completed job of bulk again? They become ready, their results forgotten." {
		t.Errorf("push all again asked %q", asked)
	}
	if got := api("GET", "/topics/bulk", ""); got["ready"] != 55.0 || got["completed"] != 0.0 {
		t.Fatalf("bulk after push all again: %v", got)
	}
	ackAll()
	tb.do(t, "delete them all",
		poll(text(`#topic-tabs a[data-state="completed"] .n`)+` === "55"`),
		chromedp.Click(`#completed-delete-all`),
		poll(`!document.getElementById("jobs-empty").hidden && `+text(`#jobs-empty`)+`.startsWith("bulk has no completed job.")`))
	if asked := tb.lastDialog(); asked != "Delete every completed job of bulk? This cannot be undone." {
		t.Errorf("delete all asked %q", asked)
	}
	if got := api("GET", "/topics/bulk", ""); got["ready"] != 0.0 || got["completed"] != 0.0 {
		t.Fatalf("bulk after delete all: %v", got)
	}
}
