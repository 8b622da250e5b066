package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gmq/gmq/broker/brokertest"
)

// TestBrowserBatches drives Chromium through the batches' pages
// (docs/workflows.md, Batches): the list shows every batch kept, newest
// first, 50 a page, with its state and counts; a batch's page shows its
// callbacks (links to their jobs), its meta and its dead jobs' errors
// (markup as text); an open batch is closed and a running one cancelled,
// each asked first, from the list and from its page; a job's page links
// to its batch. Every page fits 800 px. A page past the list's depth is
// refused (400).
func TestBrowserBatches(t *testing.T) {
	tb := openTab(t, 120*time.Second)
	b := brokertest.Fresh(t, nil)
	api := tokenAPI(t, b.URL, "") // the broker needs no token: it ignores the header
	for i := range 52 {           // the oldest: two pages' worth before the three below
		api("POST", "/batches", fmt.Sprintf(`{"jobs":[],"meta":{"n":%d}}`, i))
	}
	done := api("POST", "/batches", `{"jobs":[{"id":"part-1","topic":"parts","body":"1"}],"on_complete":{"topic":"parts-done","body":"report"}}`)
	popped := api("POST", "/pop", `{"topics":["parts"]}`)
	api("POST", "/jobs/part-1/ack", fmt.Sprintf(`{"attempt":%v}`, popped["attempt"]))
	running := api("POST", "/batches", `{"jobs":[{"id":"run-1","topic":"runs","body":"a","retry":{"max_attempts":1}},`+
		`{"id":"run-2","topic":"runs","body":"b"},{"id":"run-3","topic":"runs","body":"c","delay":600}],`+
		`"on_complete":{"topic":"runs-done","body":"all"},"on_death":{"topic":"runs-dead","body":"one died"},"meta":{"note":`+quote(xss)+`}}`)
	popped = api("POST", "/pop", `{"topics":["runs"]}`)
	api("POST", "/jobs/run-1/fail", fmt.Sprintf(`{"attempt":%v,"error":%s}`, popped["attempt"], quote(xss)))
	open := api("POST", "/batches", `{"jobs":[],"open":true}`)
	doneID, runID, openID := done["id"].(string), running["id"].(string), open["id"].(string)
	dead := fmt.Sprint(int64(api("GET", "/jobs/run-1", "")["internal_id"].(float64))) // a batch names its jobs by number

	for _, q := range []string{"offset=4990&limit=20", "offset=9223372036854775807&limit=1"} { // the second's sum wraps
		if code, data, _ := ask(t, "GET", b.URL+"/api/v1/batches?"+q, ""); code != 400 || !strings.Contains(data, "read older ones by id") {
			t.Errorf("a page past the list's depth (%s): %d %s, want 400", q, code, data)
		}
	}
	tb.do(t, "open the dashboard", chromedp.Navigate(b.URL+"/dashboard/"), chromedp.WaitVisible(`#topics`))
	row := func(id string) string { return `#batch-list tr[data-id="` + id + `"]` }
	for _, w := range []int64{1400, 800} {
		tb.viewport(t, w)
		tb.open(t, "#/batches")
		tb.do(t, fmt.Sprintf("see the batches, newest first, at %d px", w),
			poll(text(`#batches-count`)+` === "55 kept"`),
			poll(`document.querySelectorAll("#batch-list tbody tr").length === 50`),
			poll(`[...document.querySelectorAll("#batch-list tbody tr")].slice(0, 3).map(tr => tr.dataset.id).join() === `+
				quote(openID+","+runID+","+doneID)),
			poll(text(row(openID)+` td.state`)+` === "open"`),
			poll(text(row(doneID)+` td.state`)+` === "done"`),
			poll(text(row(runID)+` td.state`)+` === "closed" && `+text(row(runID)+` td.dead`)+` === "1"`),
			poll(text(row(runID)+` td.pending`)+` === "2" && `+text(row(runID)+` td.total`)+` === "3"`),
			poll(`!document.getElementById("batches-pager").hidden`))
		tb.atTop(t, "#batches-h")
		tb.fits(t, "the batches")
	}
	tb.viewport(t, 1400)
	tb.do(t, "see the last page",
		chromedp.Click(`#batches-pager a.next`),
		poll(`location.hash === "#/batches?page=2"`),
		poll(`document.querySelectorAll("#batch-list tbody tr").length === 5`),
		poll(text(`#batch-list tbody tr:last-child td.meta`)+` === '{"n":0}'`))

	t.Run("close an open batch from the list", func(t *testing.T) {
		tb.open(t, "#/batches")
		tb.do(t, "close it",
			poll(`document.querySelector('`+row(openID)+` button.close') !== null`),
			poll(`document.querySelector('`+row(runID)+` button.close') === null`), // closed already
			chromedp.Click(row(openID)+` button.close`),
			poll(text(row(openID)+` td.state`)+` === "done"`), // no jobs: done once closed
			poll(`document.querySelector('`+row(openID)+` button') === null`))
		if asked := tb.lastDialog(); asked != "Close batch "+openID+"? It is done once its 0 pending jobs have ended." {
			t.Errorf("close asked %q", asked)
		}
	})
	t.Run("a batch's page", func(t *testing.T) {
		for _, w := range []int64{1400, 800} {
			tb.viewport(t, w)
			tb.open(t, "#/batches/"+runID)
			tb.do(t, fmt.Sprintf("see the running batch at %d px", w),
				poll(text(`#batch-title`)+` === `+quote(runID)),
				poll(text(`#batch-fields dd.f-state`)+` === "closed"`),
				poll(text(`#batch-fields dd.f-dead`)+` === "1" && `+text(`#batch-fields dd.f-pending`)+` === "2"`),
				poll(`document.querySelector("#batch-fields dd.f-on-complete a") !== null && document.querySelector("#batch-fields dd.f-on-death a") !== null`),
				poll(`JSON.parse(`+text(`#batch-meta`)+`).note === `+quote(xss)),
				poll(text(`#batch-dead tr[data-id="`+dead+`"] td.error`)+` === `+quote(xss)),
				poll(`!document.getElementById("batch-cancel").hidden && document.getElementById("batch-close").hidden`))
			tb.atTop(t, "#batch-h")
			tb.fits(t, "a batch")
		}
		tb.viewport(t, 1400)
		tb.do(t, "follow its dead job to its page, and back by its batch",
			chromedp.Click(`#batch-dead tr[data-id="`+dead+`"] a`),
			poll(`location.hash === "#/jobs/`+dead+`"`),
			poll(text(`#job-fields dd.f-id`)+` === "run-1"`),
			poll(text(`#job-fields dd.f-batch`)+` === `+quote(runID)),
			chromedp.Click(`#job-fields dd.f-batch a`),
			poll(`location.hash === "#/batches/`+runID+`"`),
			poll(text(`#batch-fields dd.f-state`)+` === "closed"`))
		tb.do(t, "follow its on_death callback to its job",
			chromedp.Click(`#batch-fields dd.f-on-death a`),
			poll(text(`#job-fields dd.f-topic`)+` === "runs-dead"`))
	})
	t.Run("cancel a batch from its page", func(t *testing.T) {
		tb.open(t, "#/batches/"+runID)
		tb.do(t, "cancel it",
			poll(`!document.getElementById("batch-cancel").hidden`),
			chromedp.Click(`#batch-cancel`),
			poll(text(`#batch-fields dd.f-state`)+` === "cancelled"`),
			poll(`document.getElementById("batch-cancel").hidden`),
			poll(text(`#batch-fields dd.f-removed`)+` === "2" && `+text(`#batch-fields dd.f-pending`)+` === "0"`))
		if asked := tb.lastDialog(); asked != "Cancel batch "+runID+"? Its 2 jobs that have not ended are cancelled, and none of its callbacks is pushed." {
			t.Errorf("cancel asked %q", asked)
		}
		if code, data, _ := ask(t, "GET", b.URL+"/api/v1/jobs/run-3", ""); code != 404 {
			t.Errorf("a job of the cancelled batch, its topic keeping none: %d %s, want 404", code, data)
		}
	})
	t.Run("no such batch", func(t *testing.T) {
		tb.open(t, "#/batches/999999999")
		tb.do(t, "see why", poll(`/not found/.test(`+text(`#batch-error`)+`)`),
			poll(`document.getElementById("batch-found").hidden`))
	})
	if eval[bool](t, tb, `window.pwned === 1`) {
		t.Fatal("a dead job's error ran as a script")
	}
	tb.healthy(t)
}
