package web_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// A refresh keeps a row's button that did not change (b5a29ee), but
// setChildren puts a row's children back with replaceChildren whenever one
// of them changed (a topic row's sparkline, every poll with a new sample),
// so the kept button leaves the DOM and comes back. Chromium makes no click
// of a press and release when the pressed node was removed in between: a
// user's press that spans a refresh is still lost.
func TestBrowserKeptButtonTakesAClickAcrossARefresh(t *testing.T) {
	tb := openTab(t, 90*time.Second)
	b := brokertest.Fresh(t, func(c *config.Config) { c.Token = "t0ken" })
	api := tokenAPI(t, b.URL, "t0ken")
	api("POST", "/jobs", `{"topic":"kept-click","body":"x"}`)
	tb.viewport(t, 1400)
	row := `tr[data-topic="kept-click"]`
	tb.do(t, "sign in",
		chromedp.Navigate(b.URL+"/dashboard/"),
		chromedp.WaitVisible(`input[name="token"]`),
		chromedp.SendKeys(`input[name="token"]`, "t0ken"),
		chromedp.Submit(`input[name="token"]`),
		chromedp.WaitVisible(row+` button.pause`))
	// Count the clicks on the button (and stop them: no confirm, no pause),
	// the renders, and each time the button leaves the DOM.
	tb.do(t, "watch the button", chromedp.Evaluate[chromedp.Void](`
		window.btn = document.querySelector('`+row+` button.pause');
		window.clicks = 0; window.removed = 0; window.renders = 0;
		document.addEventListener('click', e => { if (e.target === window.btn) { window.clicks++; e.stopPropagation(); e.preventDefault(); } }, true);
		new MutationObserver(ms => { for (const m of ms) for (const n of m.removedNodes) if (n.contains(window.btn)) window.removed++; })
			.observe(document.querySelector('#topics tbody'), {childList: true, subtree: true});
		{ const render = replaceRows; replaceRows = (...a) => { render(...a); window.renders++; }; }`),
		poll(`window.renders >= 2`))
	r := eval[[]float64](t, tb, `(r => [r.x + r.width/2, r.y + r.height/2])(window.btn.getBoundingClientRect())`)
	x, y := r[0], r[1]
	tb.do(t, "press and release at once: a click", chromedp.MouseClickXY(x, y), poll(`window.clicks === 1`))
	renders := eval[int](t, tb, `window.renders`)
	tb.do(t, "press, a refresh, release",
		chromedp.MouseEvent(chromedp.MousePressed, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		poll(`window.renders > `+strconv.Itoa(renders)+` && window.btn === document.querySelector('`+row+` button.pause')`),
		chromedp.MouseEvent(chromedp.MouseReleased, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	if err := chromedp.Do(tb.ctx, chromedp.Poll[chromedp.Void](`window.clicks === 2`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Errorf("a press and release on the same kept button across a refresh made no click: clicks %d, the button taken out and put back %d times",
			eval[int](t, tb, `window.clicks`), eval[int](t, tb, `window.removed`))
	}
}
