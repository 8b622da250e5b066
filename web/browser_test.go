package web_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// TestDashboardInBrowser drives Debian's Chromium (headless) against a live
// broker with a token: it signs in, sees counts change as jobs are pushed,
// looks a job up (its HTML body must show as text), kicks a buried job and
// sees it move, and saves a screenshot. GMQ_SCREENSHOT=path keeps the
// screenshot (docs/operations.md shows docs/dashboard.png).
func TestDashboardInBrowser(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("GMQ_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("chromium not found (apt-get install -y chromium)")
		}
		t.Skip("chromium not found (apt-get install -y chromium)")
	}
	b := brokertest.Fresh(t, func(c *config.Config) { c.Token = "t0ken"; c.HistoryEvery = 200 * time.Millisecond })

	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1500),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true))
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// Every action asks for confirmation: accept it, as the operator would.
	err = chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go func() { // a listener must not run commands itself
				if _, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true}); err != nil {
					t.Logf("accept dialog: %v", err)
				}
			}()
		}
	})
	must(t, err, "listen for dialogs")

	api := func(method, path, body string) map[string]any {
		t.Helper()
		req, err := http.NewRequest(method, b.URL+"/api/v1"+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer t0ken")
		req.Header.Set("Content-Type", "application/json")
		return do(t, req)
	}
	// cell is the text of a topic row's column, read in the page.
	cell := func(topic, col string) string {
		return `(document.querySelector('tr[data-topic="` + topic + `"] td.` + col + `') || {}).textContent`
	}

	// poll waits until a JavaScript expression holds in the page.
	poll := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(10*time.Second))
	}

	// Sign in through the login form the dashboard redirects to.
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(b.URL+"/dashboard/"),
		chromedp.WaitVisible(`input[name="token"]`),
		chromedp.SendKeys(`input[name="token"]`, "t0ken"),
		chromedp.Submit(`input[name="token"]`),
		chromedp.WaitVisible(`#topics`),
	), "sign in")

	// Counts change as jobs arrive.
	xss := `<script>window.pwned=1</script><b id="bold">bold</b>`
	hostile := api("POST", "/jobs", `{"id":"hostile-1","topic":"emails","body":`+quote(xss)+`}`)["id"].(string)
	api("POST", "/jobs", `{"topic":"emails","body":"hello"}`)
	api("POST", "/jobs", `{"topic":"emails","body":"later","delay":600}`)
	must(t, chromedp.Do(ctx, poll(cell("emails", "ready")+` === "2" && `+cell("emails", "delayed")+` === "1"`)),
		"see the pushed jobs counted")

	// A job's HTML body shows as text, and runs nothing.
	must(t, chromedp.Do(ctx,
		chromedp.SendKeys(`#job-id`, hostile),
		chromedp.Click(`#lookup button`), // a click fires the form's submit handler; form.submit() would not
		chromedp.WaitVisible(`#job-body`),
	), "look the job up")
	body, err := chromedp.Run(ctx, chromedp.TextContent(`#job-body`))
	must(t, err, "read the body")
	pwned, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.pwned === 1`))
	must(t, err, "check no script ran")
	boldInside, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#job-body #bold') !== null`))
	must(t, err, "check no markup rendered")
	if body != xss || pwned || boldInside {
		t.Fatalf("job body shown as %q (script ran: %v, markup rendered: %v), want the text itself", body, pwned, boldInside)
	}

	// Bury a job through the API, then kick it from the dashboard.
	job := api("POST", "/pop", `{"topics":["emails"]}`)
	api("POST", "/jobs/"+job["id"].(string)+"/bury", ``)
	must(t, chromedp.Do(ctx,
		poll(cell("emails", "buried")+` === "1"`),
		chromedp.Click(`tr[data-topic="emails"] button.kick`),
		poll(cell("emails", "buried")+` === "0" && `+cell("emails", "ready")+` === "2"`),
	), "kick the buried job")
	if got := api("GET", "/jobs/"+job["id"].(string), ``); got["state"] != "ready" || got["kicks"] != 1.0 {
		t.Fatalf("kicked job: %v", got)
	}

	// A topic's limits show in its row; the server status is set from the page.
	api("PUT", "/topics/emails/config", `{"max_items": 100, "discard_old_when_full": true}`)
	must(t, chromedp.Do(ctx, poll(cell("emails", "limits")+` === "≤ 100 jobs · drops oldest when full"`)), "see the topic's limits")
	// Its expiry settings and fanout children too.
	api("PUT", "/topics/emails/config", `{"max_age": 3600, "expire_to": "late"}`)
	api("GET", "/topics/emails+audit/config", ``) // a reference: emails+audit is a child now
	must(t, chromedp.Do(ctx, poll(cell("emails", "limits")+` === "≤ 100 jobs · drops oldest when full · expires after 3600s · expired → late"`),
		poll(cell("emails", "fanout")+` === "→ emails+audit"`)), "see the topic's expiry and children")
	// Per-topic rates and queue latency.
	must(t, chromedp.Do(ctx,
		poll(cell("emails", "rates")+`.startsWith("push ")`),
		poll(cell("emails", "latency")+` !== "–"`),
	), "see a topic's rates and queue latency")

	// A topic's jobs, by state: the ready ones of emails, then its delayed one.
	must(t, chromedp.Do(ctx,
		chromedp.Click(`tr[data-topic="emails"] button.jobs`),
		poll(`document.querySelectorAll('#job-list tbody tr').length === 2`),
		poll(`(document.querySelector('#job-list tr[data-id="hostile-1"] td.body') || {}).textContent.includes("<script>")`),
		chromedp.Click(`#jobs .tabs button[data-state="delayed"]`),
		poll(`document.getElementById("jobs-count").textContent === "1 delayed"`),
	), "list a topic's jobs by state")
	// A dead job: listed from its topic's row, retried from the list.
	api("POST", "/jobs", `{"id":"poison-1","topic":"poison","body":"<b>bad</b>","retry":{"max_attempts":1}}`)
	api("POST", "/pop", `{"topics":["poison"]}`)
	api("POST", "/jobs/poison-1/fail", `{"error":"cannot parse"}`)
	must(t, chromedp.Do(ctx,
		poll(cell("poison", "dead")+` === "1"`),
		chromedp.Click(`tr[data-topic="poison"] button.dead`),
		poll(`(document.querySelector('#dead-jobs tr[data-id="poison-1"] td.last-error') || {}).textContent === "cannot parse"`),
		poll(`(document.querySelector('#dead-jobs tr[data-id="poison-1"] td.body') || {}).textContent === "<b>bad</b>"`),
		chromedp.Click(`#dead-jobs tr[data-id="poison-1"] button.retry`),
		poll(cell("poison", "dead")+` === "0" && `+cell("poison", "ready")+` === "1"`),
	), "retry a dead job from the dashboard")
	must(t, chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`(s => { s.value = "readonly"; s.dispatchEvent(new Event("change")); })(document.getElementById("set-status"))`),
		poll(`document.getElementById("s-state").textContent === "readonly"`),
	), "set the server status")
	if got := api("GET", "/status", ``); got["status"] != "readonly" {
		t.Fatalf("status after the dashboard set it: %v", got)
	}
	api("PUT", "/status", `{"status":"up"}`)
	must(t, chromedp.Do(ctx, poll(`document.getElementById("s-state").textContent === "up"`)), "see the status back up")

	// A page opened anew starts its chart from the brokers' history in Redis
	// (a sample every 200 ms here), not empty.
	must(t, chromedp.Do(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(`#topics`),
		poll(`serverHistory.length > 10`),
	), "the chart starts from the history")

	// A chart needs a few samples: let it gather them, then take the picture.
	api("POST", "/jobs/batch", `{"jobs":[{"topic":"reports","body":"r1"},{"topic":"reports","body":"r2"},{"topic":"thumbnails","body":"t","delay":300}]}`)
	time.Sleep(5 * time.Second)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	must(t, err, "screenshot")
	dest := os.Getenv("GMQ_SCREENSHOT")
	if dest == "" {
		dest = filepath.Join(t.TempDir(), "dashboard.png")
	}
	if err := os.WriteFile(dest, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", dest, len(png))

	// Redis loses its data (after the picture, which docs/operations.md shows): a
	// banner says so.
	must(t, chromedp.Do(ctx, poll(`document.getElementById("data-lost").hidden`)), "no banner while the data is whole")
	brokertest.Redis().Flush(t)
	must(t, chromedp.Do(ctx, poll(`!document.getElementById("data-lost").hidden && `+
		`document.getElementById("data-lost").textContent.startsWith("Redis lost gmq's data once")`)), "see the data loss on the dashboard")
}

func must(t *testing.T, err error, step string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}
