package web_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// tab is a headless Chromium tab (Debian's chromium) for the dashboard's
// tests. It answers every confirm() as accept says, and keeps what each
// asked, and every uncaught exception and Content-Security-Policy
// violation of its pages.
type tab struct {
	ctx    context.Context
	accept atomic.Bool

	mu       sync.Mutex
	dialogs  []string
	problems []string
}

// reportCSP has each page report its Content-Security-Policy violations
// through the binding cspViolation.
const reportCSP = `document.addEventListener("securitypolicyviolation", e => cspViolation(e.violatedDirective + " " + e.blockedURI))`

// dashboardZone is the time zone the tab runs in: the dashboard shows times
// in the browser's zone, and +05:30 is neither UTC nor a whole hour off it.
const dashboardZone = "Asia/Kolkata"

var kolkata = time.FixedZone("IST", 5*3600+1800) // no daylight saving

// openTab starts Chromium, or skips the test when it is not installed
// (fails instead under GMQ_REQUIRE_CHROMIUM=1, as CI sets).
func openTab(t *testing.T, timeout time.Duration) *tab {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("GMQ_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("chromium not found (apt-get install -y chromium)")
		}
		t.Skip("chromium not found (apt-get install -y chromium)")
	}
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 900),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true))
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel)
	tb := &tab{ctx: ctx}
	tb.accept.Store(true)
	err = chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			tb.mu.Lock()
			tb.dialogs = append(tb.dialogs, ev.Message)
			tb.mu.Unlock()
			accept := tb.accept.Load()
			go func() { // a listener must not run commands itself
				if _, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept}); err != nil {
					t.Logf("answer dialog: %v", err)
				}
			}()
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			if d.Exception != nil {
				tb.problem(fmt.Sprintf("uncaught at %s:%d: %s", d.URL, d.LineNumber+1, d.Exception.Description))
			} else {
				tb.problem(fmt.Sprintf("uncaught at %s:%d: %s", d.URL, d.LineNumber+1, d.Text))
			}
		case *runtime.EventBindingCalled:
			tb.problem("Content-Security-Policy refused " + ev.Payload)
		}
	})
	must(t, err, "listen for dialogs")
	_, err = chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: dashboardZone})
	must(t, err, "set the time zone")
	_, err = chromedp.Call(ctx, runtime.AddBinding, runtime.AddBindingParams{Name: "cspViolation"})
	must(t, err, "add a binding")
	_, err = chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: reportCSP})
	must(t, err, "report CSP violations")
	return tb
}

func (tb *tab) problem(p string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.problems = append(tb.problems, p)
}

// healthy fails the test if a page threw an uncaught exception or broke
// its Content-Security-Policy.
func (tb *tab) healthy(t *testing.T) {
	t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.problems) > 0 {
		t.Errorf("the dashboard's pages:\n  %s", strings.Join(tb.problems, "\n  "))
	}
}

// do runs steps, failing the test with what it was doing.
func (tb *tab) do(t *testing.T, step string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	must(t, chromedp.Do(tb.ctx, steps...), step)
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, tb *tab, expr string) T {
	t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr))
	must(t, err, "evaluate "+expr)
	return v
}

// lastDialog is what the last confirm() asked ("" when none did).
func (tb *tab) lastDialog() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.dialogs) == 0 {
		return ""
	}
	return tb.dialogs[len(tb.dialogs)-1]
}

func (tb *tab) dialogCount() int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return len(tb.dialogs)
}

// viewport makes the page w CSS pixels wide.
func (tb *tab) viewport(t *testing.T, w int64) {
	tb.do(t, fmt.Sprintf("make the page %d px wide", w), chromedp.EmulateViewport(w, 900))
}

// poll waits until a JavaScript expression holds in the page.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(10*time.Second))
}

// open shows the dashboard's page at hash by loading it anew, as a reload
// (or a bookmark) would.
func (tb *tab) open(t *testing.T, hash string) {
	t.Helper()
	tb.do(t, "open "+hash,
		chromedp.Evaluate[chromedp.Void](`location.hash = `+quote(hash)),
		chromedp.Reload(),
		poll(`document.querySelector(".view:not([hidden])") !== null`))
}

// text is the JavaScript for the text of the first element sel matches
// (undefined when none does).
func text(sel string) string {
	return `(document.querySelector(` + quote(sel) + `) || {}).textContent`
}

// overflowJS lists what spills sideways on the page shown: the page wider
// than its window (a horizontal scrollbar), an element reaching past the
// window's edges, an element whose content is wider than its box (unless
// the box clips it on purpose: overflow hidden or auto), a card that does
// not fit its text, and a card value cut short without its whole text as
// a tooltip.
const overflowJS = `(() => {
  const vw = document.documentElement.clientWidth, bad = [];
  const name = e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") +
    (typeof e.className === "string" && e.className.trim() ? "." + e.className.trim().split(/\s+/).join(".") : "");
  if (document.documentElement.scrollWidth > vw) bad.push("the page scrolls sideways: " + document.documentElement.scrollWidth + " > " + vw);
  for (const e of document.querySelectorAll("body *")) {
    if (e.closest("svg") && e.tagName.toLowerCase() !== "svg") continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.right > vw + 0.5 || r.left < -0.5) bad.push(name(e) + " spans " + r.left.toFixed(1) + " to " + r.right.toFixed(1) + " of " + vw);
    const cs = getComputedStyle(e);
    if (cs.overflowX === "visible" && cs.display !== "inline" && e.scrollWidth > e.clientWidth + 1) {
      bad.push(name(e) + " holds " + e.scrollWidth + " px in " + e.clientWidth);
    }
  }
  for (const c of document.querySelectorAll(".card")) {
    if (c.offsetParent && c.scrollWidth > c.clientWidth) bad.push("card " + c.textContent.trim().slice(0, 30) + ": " + c.scrollWidth + " > " + c.clientWidth);
  }
  for (const v of document.querySelectorAll(".card .value")) {
    if (v.offsetParent && v.scrollWidth > v.clientWidth && v.title !== v.textContent) bad.push("card value " + v.id + " cut short without a tooltip");
  }
  return bad.slice(0, 12);
})()`

// fits fails the test when anything spills sideways on the page shown.
func (tb *tab) fits(t *testing.T, where string) {
	t.Helper()
	if bad := eval[[]string](t, tb, overflowJS); len(bad) > 0 {
		t.Errorf("%s spills over at %d px:\n  %s", where, eval[int](t, tb, `document.documentElement.clientWidth`), strings.Join(bad, "\n  "))
	}
}

// atTop checks that the page shown opened where the eye is: scrolled to
// its top, its heading (heading, a selector) in view and focused.
func (tb *tab) atTop(t *testing.T, heading string) {
	t.Helper()
	tb.do(t, "see "+heading+" at the top, focused", poll(`(h => h && document.activeElement === h && window.scrollY === 0 && `+
		`h.getBoundingClientRect().top >= 0 && h.getBoundingClientRect().bottom <= innerHeight)(document.querySelector(`+quote(heading)+`))`))
}

func must(t *testing.T, err error, step string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}
