package web_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
)

// limitsForm sets a topic's flow control from its page and sees it on the
// overview: the form shows the settings, an empty field puts one back.
func limitsForm(t *testing.T, tb *tab, api apiFunc) {
	tb.open(t, "#/topics/emails/ready")
	tb.do(t, "set a topic's rate and max_reserved from its page",
		poll(`document.getElementById("limit-rate").value === ""`),
		chromedp.SendKeys(`#limit-rate`, "2.5"),
		chromedp.SendKeys(`#limit-max-reserved`, "2"),
		chromedp.SendKeys(`#limit-group-max-reserved`, "1"),
		chromedp.Click(`#limits button[type="submit"]`),
		poll(text("#limit-state")+` === "1 token"`)) // burst 1: one token at most
	if asked := tb.lastDialog(); asked != "Set emails's limits: rate 2.5/s, burst 1, max reserved 2; per group: max reserved 1, rate none/s?" {
		t.Errorf("the confirmation asked %q", asked)
	}
	got := api("GET", "/topics/emails/config", "")["run"].(map[string]any)
	if got["rate"] != 2.5 || got["max_reserved"] != 2.0 || got["burst"] != nil || got["group_max_reserved"] != 1.0 {
		t.Fatalf("the topic's run-time settings after the form: %v", got)
	}
	tb.open(t, "#/")
	tb.do(t, "see the limits on the overview",
		poll(`(`+text(`tr[data-topic="emails"] .limits`)+` || "").endsWith("≤ 2.5/s · ≤ 2 reserved · ≤ 1 reserved a group")`),
		poll(text(`tr[data-topic="emails"] .flow`)+` === "1 token"`))
	tb.open(t, "#/topics/emails/ready")
	tb.do(t, "take the rate back",
		poll(`document.getElementById("limit-rate").value === "2.5"`),
		// Emptied and sent at once: a refresh between the two would fill it again.
		chromedp.Evaluate[chromedp.Void](`document.getElementById("limit-rate").value = ""; document.getElementById("limits").requestSubmit()`),
		poll(text("#limit-state")+` === ""`))
	if got := api("GET", "/topics/emails/config", "")["run"].(map[string]any); got["rate"] != nil || got["max_reserved"] != 2.0 {
		t.Fatalf("the run-time settings after the rate was emptied: %v", got)
	}
	api("POST", "/jobs/batch", `{"jobs":[{"topic":"fair","body":"a","group":"tenant-a"},{"topic":"fair","body":"a","group":"tenant-a"},{"topic":"fair","body":"b","group":"tenant-b"}]}`)
	tb.open(t, "#/topics/fair/ready")
	tb.do(t, "see a grouped topic's busiest groups",
		poll(text("#topic-groups")+` === "2 groups with ready jobs; busiest: tenant-a: 2 ready, 0 reserved · tenant-b: 1 ready, 0 reserved"`))
}

// schedulesPage lists the schedules with their next fire; Pause, Resume and
// Fire now act on one, each asked first.
func schedulesPage(t *testing.T, tb *tab, api apiFunc) {
	api("PUT", "/schedules/nightly", `{"cron":"0 3 * * *","tz":"Europe/Berlin","job":{"topic":"reports","body":"build"}}`)
	tb.open(t, "#/schedules")
	row := `tr[data-schedule="nightly"]`
	tb.do(t, "see the schedule and its next fire",
		poll(text(row+` td:nth-child(2)`)+` === "0 3 * * * (Europe/Berlin)"`),
		poll(`(`+text(row+` .next`)+` || "").includes("(in ")`))
	tb.do(t, "pause it", chromedp.Click(row+` button.pause`), poll(text(row+` .next`)+` === "paused"`))
	if asked := tb.lastDialog(); asked != "Pause schedule nightly?" {
		t.Errorf("the confirmation asked %q", asked)
	}
	tb.do(t, "fire it now", chromedp.Click(row+` button.fire`), poll(text(row+` .fires`)+` === "1"`))
	if got := api("GET", "/topics/reports", ""); got["ready"] != 1.0 {
		t.Fatalf("reports after a fire now: %v", got)
	}
	tb.do(t, "resume it", chromedp.Click(row+` button.pause`), poll(`(`+text(row+` .next`)+` || "").includes("(in ")`))
}

// deliveryRow points a topic at an endpoint (HTTP push delivery) and sees
// this broker's deliveries on the topic's row: where to, sent, acked,
// failed, the mean time, and the last failure in its tooltip.
func deliveryRow(t *testing.T, tb *tab, api apiFunc) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) == 1 {
			w.WriteHeader(200)
			return
		}
		w.WriteHeader(500)
		w.Write([]byte("out of paper"))
	}))
	defer srv.Close()
	api("PUT", "/topics/hooks/config", `{"deliver_to": "`+srv.URL+`", "max_attempts": 1}`)
	api("POST", "/jobs/batch", `{"jobs":[{"topic":"hooks","body":"a"},{"topic":"hooks","body":"b"}]}`)
	row := `tr[data-topic="hooks"] .delivery`
	tb.open(t, "#/")
	prefix := "→ " + srv.URL + " · 2 sent · 1 acked · 1 failed · "
	tb.do(t, "see the topic's deliveries on its row",
		poll(`(`+text(row)+` || "").startsWith(`+quote(prefix)+`)`),
		poll(`(document.querySelector(`+quote(row)+`).title || "").endsWith("HTTP 500: out of paper")`))
	api("PUT", "/topics/hooks/config", `{"deliver_to": null}`)
}
