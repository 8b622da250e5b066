package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gmq/gmq/broker/brokertest"
)

// TestBrowserJobRetryPolicy drives Chromium to a failed job's page: it
// shows how many attempts the job has (its topic's default, 25) and when
// its next one is due, which GET /api/v1/jobs/ID says (issue 49: a page
// that said "failures 1" and nothing of a retry).
func TestBrowserJobRetryPolicy(t *testing.T) {
	tb := openTab(t, 90*time.Second)
	b := brokertest.Fresh(t, nil)
	api := tokenAPI(t, b.URL, "")
	api("PUT", "/topics/rp/config", `{"backoff": "fixed", "backoff_base": 600}`) // it waits 10 min: still delayed when the page looks
	api("POST", "/jobs", `{"id":"rp-1","topic":"rp","body":"x"}`)
	popped := api("POST", "/pop", `{"topics":["rp"]}`)
	api("POST", "/jobs/rp-1/fail", fmt.Sprintf(`{"attempt":%v,"error":"smtp 550"}`, popped["attempt"]))
	next := api("GET", "/jobs/rp-1", "")["next_attempt_at"]
	at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(next))
	must(t, err, "read the job's next_attempt_at")

	tb.do(t, "open the dashboard", chromedp.Navigate(b.URL+"/dashboard/"), chromedp.WaitVisible(`#topics`))
	tb.open(t, "#/jobs/rp-1")
	tb.do(t, "see the job's retry policy",
		poll(text(`#job-fields dd.f-state`)+` === "delayed"`),
		poll(text(`#job-fields dd.f-failures`)+` === "1"`),
		poll(text(`#job-fields dd.f-max-attempts`)+` === "25"`),
		poll(text(`#job-fields dd.f-next-attempt`)+fmt.Sprintf(`.startsWith(%q)`, at.In(kolkata).Format("2006-01-02 15:04")+" (in ")))
	tb.healthy(t)
}
