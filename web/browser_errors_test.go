package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/job"
)

// TestBrowserJobErrors drives Chromium against a broker where a job failed
// five times (an error of markup, one without an error) and died: its page
// lists each failure's time, attempt and error, oldest first, as the API
// gives them, the markup as text; its row in the dead list shows the
// newest three, one a line, and counts the others, all five in its
// tooltip; a job that never failed shows no Errors; the pages fit 800 px.
func TestBrowserJobErrors(t *testing.T) {
	tb := openTab(t, 90*time.Second)
	b := brokertest.Fresh(t, nil)
	api := tokenAPI(t, b.URL, "") // the broker needs no token: it ignores the header
	api("PUT", "/topics/errs-browser/config", `{"max_attempts": 5, "backoff": "fixed", "backoff_base": 0}`)
	api("POST", "/jobs", `{"id":"eb-1","topic":"errs-browser","body":"refund"}`)
	for _, body := range []string{`,"error":"smtp 550"`, `,"error":` + quote(xss), ``, `,"error":"dns"`, `,"error":"smtp 451"`} {
		popped := api("POST", "/pop", `{"topics":["errs-browser"]}`) // backoff 0: ready again at once
		api("POST", "/jobs/eb-1/fail", fmt.Sprintf(`{"attempt":%v%s}`, popped["attempt"], body))
	}
	api("POST", "/jobs", `{"id":"eb-fine","topic":"errs-browser","body":"x"}`)

	var want, lines []string // each entry as the job's page is to show it; as its row is
	for _, e := range api("GET", "/jobs/eb-1", "")["errors"].([]any) {
		e := e.(map[string]any)
		at, err := time.Parse(time.RFC3339Nano, e["at"].(string))
		must(t, err, "read an entry's time")
		want = append(want, strings.Join([]string{e["at"].(string), at.In(kolkata).Format("2006-01-02 15:04:05"),
			fmt.Sprintf("attempt %v", e["attempt"]), e["error"].(string)}, "|"))
		lines = append([]string{fmt.Sprintf("attempt %v: %v", e["attempt"], e["error"])}, lines...)
	}
	if len(want) != 5 || !strings.HasSuffix(want[2], "|attempt 3|"+job.NoReason) {
		t.Fatalf("the broker kept %q", want)
	}

	tb.do(t, "open the dashboard", chromedp.Navigate(b.URL+"/dashboard/"), chromedp.WaitVisible(`#topics`))
	entries := `[...document.querySelectorAll("#job-errors li")]`
	for _, w := range []int64{1400, 800} {
		tb.viewport(t, w)
		tb.open(t, "#/jobs/eb-1")
		tb.do(t, fmt.Sprintf("see the job's errors at %d px", w),
			poll(text(`#job-fields dd.f-state`)+` === "dead"`),
			poll(`!document.getElementById("job-errors-part").hidden`),
			poll(text(`#job-errors-count`)+` === "the last 5 failures"`))
		got := eval[[]string](t, tb, entries+`.map(li => [li.querySelector("time").dateTime, ...[...li.children].map(c => c.textContent)].join("|"))`)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("the errors shown:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		if eval[bool](t, tb, `document.querySelector("#bold, #job-errors b, #job-errors script") !== null || window.pwned === 1`) {
			t.Fatal("a failure's error rendered as markup")
		}
		tb.fits(t, "a job with errors")

		tb.open(t, "#/topics/errs-browser/dead")
		row := `#job-list tr[data-id="eb-1"]`
		tb.do(t, fmt.Sprintf("see the dead job's errors in its row at %d px", w),
			poll(`document.querySelectorAll('`+row+` td.errors li').length === 4`))
		shown := eval[[]string](t, tb, `[...document.querySelectorAll('`+row+` td.errors li')].map(li => li.textContent)`)
		if wantShown := append(append([]string{}, lines[:3]...), "and 2 earlier"); strings.Join(shown, "\n") != strings.Join(wantShown, "\n") {
			t.Errorf("the row shows:\n  %s\nwant:\n  %s", strings.Join(shown, "\n  "), strings.Join(wantShown, "\n  "))
		}
		if tip := eval[string](t, tb, `document.querySelector('`+row+` td.errors').title`); tip != strings.Join(lines, "\n") {
			t.Errorf("the row's tooltip %q, want %q", tip, strings.Join(lines, "\n"))
		}
		if eval[bool](t, tb, `document.querySelector("#bold, #job-list b, #job-list script") !== null || window.pwned === 1`) {
			t.Fatal("a failure's error rendered as markup in the dead list")
		}
		tb.fits(t, "the dead list with errors")
	}

	tb.open(t, "#/jobs/eb-fine")
	tb.do(t, "see no errors on a job that never failed",
		poll(text(`#job-fields dd.f-state`)+` === "ready"`),
		poll(`document.getElementById("job-errors-part").hidden && `+entries+`.length === 0`))
	tb.healthy(t)
}
