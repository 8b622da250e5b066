package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"html"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// sessionCookie carries the dashboard's session once its login form took the
// token. It never holds the token itself: it is "<expiry>.<nonce>.<mac>",
// the MAC keyed by the token, so every broker sharing the token accepts it,
// a stolen cookie is good until its expiry at most, and changing the token
// ends every session.
const sessionCookie = "gmq_session"

// sessionLife is how long a dashboard session lasts.
const sessionLife = 12 * time.Hour

// requireToken lets a request through when no token is configured, or when it
// carries the token ("Authorization: Bearer <token>", the scheme in any case)
// or a live dashboard session. Otherwise the API answers 401 and the
// dashboard shows its login form; a client address that sent more than
// wrongTokens wrong ones within a minute is answered 429 instead (guesses).
// A right token always passes, whatever its address sent before: a guesser
// on the operator's address (127.0.0.1, a shared proxy) cannot lock the
// operator out. So the limit does not stop a guess that is right; it makes
// guessing loud (429s, a log line a burst) and slow for a client that
// respects Retry-After. A long random token is the defence, and a short
// one is warned of at start (web.New).
func (s *Server) requireToken(c *gin.Context) {
	if s.opts.Token == "" || s.tokenOK(c) {
		return // gin runs the next handler
	}
	if strings.HasPrefix(c.Request.URL.Path, dashboardPath) {
		c.Redirect(http.StatusSeeOther, dashboardPath+"login")
		c.Abort()
		return
	}
	addr := clientAddr(c)
	if c.GetHeader("Authorization") != "" { // a wrong token, not a client that sent none
		s.wrongToken(addr)
	}
	if !s.logins.allow(addr, time.Now()) {
		c.Header("Retry-After", "60")
		c.AbortWithStatusJSON(http.StatusTooManyRequests, gin.H{"error": "too many wrong tokens from this address: try again in a minute"})
		return
	}
	c.Header("WWW-Authenticate", `Bearer realm="gmq"`)
	c.AbortWithStatusJSON(http.StatusUnauthorized, gin.H{"error": "this gmq requires a token: send Authorization: Bearer <token>"})
}

// wrongToken counts a wrong token from addr, and logs the first past the
// limit (one line a minute per address at most).
func (s *Server) wrongToken(addr string) {
	if s.logins.failed(addr, time.Now()) == wrongTokens+1 {
		s.log.Warn("too many wrong tokens from one address: answering it 429 for the rest of the minute", "addr", addr)
	}
}

func clientAddr(c *gin.Context) string {
	addr, _, err := net.SplitHostPort(c.Request.RemoteAddr)
	if err != nil {
		return c.Request.RemoteAddr
	}
	return addr
}

func (s *Server) tokenOK(c *gin.Context) bool {
	if scheme, given, ok := strings.Cut(c.GetHeader("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") &&
		s.sameToken(strings.TrimSpace(given)) {
		return true
	}
	cookie, err := c.Cookie(sessionCookie)
	return err == nil && s.sessions.valid(cookie, time.Now())
}

// sameToken compares in constant time, hashing first so that not even the
// token's length leaks.
func (s *Server) sameToken(given string) bool {
	a, b := sha256.Sum256([]byte(given)), sha256.Sum256([]byte(s.opts.Token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// sessions makes and checks dashboard session values, and remembers the
// ones logged out on this broker until they expire.
type sessions struct {
	key []byte

	mu     sync.Mutex
	closed map[string]time.Time // session value -> its expiry
}

func newSessions(token string) *sessions {
	key := sha256.Sum256([]byte("gmq dashboard session\x00" + token))
	return &sessions{key: key[:], closed: map[string]time.Time{}}
}

func (ss *sessions) mac(payload string) string {
	m := hmac.New(sha256.New, ss.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// open makes a new session value that expires at expiry.
func (ss *sessions) open(expiry time.Time) string {
	payload := strconv.FormatInt(expiry.Unix(), 10) + "." + rand.Text()
	return payload + "." + ss.mac(payload)
}

func (ss *sessions) valid(value string, now time.Time) bool {
	if !ss.verify(value, now) {
		return false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, closed := ss.closed[value]
	return !closed
}

// verify says whether value is a session this token made (its MAC holds)
// and has not expired.
func (ss *sessions) verify(value string, now time.Time) bool {
	i := strings.LastIndexByte(value, '.')
	if i < 0 || !hmac.Equal([]byte(value[i+1:]), []byte(ss.mac(value[:i]))) {
		return false
	}
	exp, err := strconv.ParseInt(value[:strings.IndexByte(value, '.')], 10, 64)
	return err == nil && now.Unix() < exp
}

// close ends a session on this broker (other brokers sharing the token
// accept it until it expires; the browser drops it at once). Only a value
// that verifies is remembered: the logout needs no token, so anything else
// would let anyone fill the set (800 logouts with 1 MB cookies took 940 MB).
// Verified values are as many as logins, which need the token.
func (ss *sessions) close(value string, now time.Time) {
	if !ss.verify(value, now) {
		return
	}
	exp, _ := strconv.ParseInt(value[:strings.IndexByte(value, '.')], 10, 64)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for v, e := range ss.closed { // forget the expired, so the set stays small
		if now.After(e) {
			delete(ss.closed, v)
		}
	}
	ss.closed[value] = time.Unix(exp, 0)
}

// wrongTokens is how many wrong tokens a client address may send a minute,
// through the login form and the Authorization header together.
const wrongTokens = 5

// loginGuard counts wrong tokens per client address, per minute.
type loginGuard struct {
	mu     sync.Mutex
	window time.Time
	wrong  map[string]int
}

// roll starts a new minute when the last one is over. g.mu is held.
func (g *loginGuard) roll(now time.Time) {
	if now.Sub(g.window) >= time.Minute || g.wrong == nil {
		g.window, g.wrong = now, map[string]int{}
	}
}

// allow says whether addr is still within its wrong tokens this minute.
func (g *loginGuard) allow(addr string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.roll(now)
	return g.wrong[addr] <= wrongTokens
}

// failed counts a wrong token from addr and returns its count this minute.
func (g *loginGuard) failed(addr string, now time.Time) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.roll(now)
	if _, ok := g.wrong[addr]; ok || len(g.wrong) < 100_000 { // a flood of addresses only fills it for a minute
		g.wrong[addr]++
	}
	return g.wrong[addr]
}

// loginForm is the dashboard's only page that needs no token: the %s are
// the dashboard address to show after signing in (see loginNext), a
// problem with the last try, and loginScript.
const loginForm = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gmq · sign in</title>
<link rel="stylesheet" href="/dashboard/style.css"></head>
<body class="login"><form method="post" action="/dashboard/login">
<h1>gmq</h1><p>This broker requires its token.</p>
<input type="password" name="token" placeholder="token" autofocus required>
<input type="hidden" name="next" value="%s">
<button type="submit">Sign in</button>%s</form>
<script>%s</script></body></html>`

// loginScript copies the page's # into the form: the dashboard page that
// sent the browser here (#/jobs/123), which it kept through the redirect
// but never sends, so that signing in lands there rather than on the
// overview. It leaves the value the server wrote alone when there is none
// (the form again after a wrong token).
const loginScript = `"use strict";
if (/^#\/[\x21-\x7e]{0,1022}$/.test(location.hash)) document.querySelector('input[name="next"]').value = location.hash;`

// maxLoginNext bounds the dashboard address a login carries (see loginNext).
const maxLoginNext = 1024

// loginCSP is the login page's Content-Security-Policy: its stylesheet,
// loginScript alone (by its hash), nothing framing it.
var loginCSP = func() string {
	sum := sha256.Sum256([]byte(loginScript))
	return "default-src 'self'; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; frame-ancestors 'none'"
}()

// loginNext is the dashboard page to show after signing in, from the
// form's next: one of the dashboard's own addresses after its # ("#/",
// then printable ASCII, as a browser's location.hash is, at most
// maxLoginNext bytes), or "" (the overview) for anything else, so that the
// redirect never leaves the dashboard.
func loginNext(next string) string {
	if len(next) > maxLoginNext || !strings.HasPrefix(next, "#/") {
		return ""
	}
	for i := range len(next) {
		if next[i] < 0x21 || next[i] > 0x7e {
			return ""
		}
	}
	return next
}

// loginPageHTML is the login form carrying next, with problem (HTML) under it.
func loginPageHTML(next, problem string) []byte {
	return fmt.Appendf(nil, loginForm, html.EscapeString(next), problem, loginScript)
}

func (s *Server) loginPage(c *gin.Context) {
	c.Header("Content-Security-Policy", loginCSP)
	c.Data(http.StatusOK, "text/html; charset=utf-8", loginPageHTML("", ""))
}

// login checks the form's token and opens a session, then shows the
// dashboard page the form carried (loginNext), or the overview.
func (s *Server) login(c *gin.Context) {
	next := loginNext(c.PostForm("next"))
	// The token first: a right one always signs in (see requireToken).
	if s.opts.Token == "" || !s.sameToken(c.PostForm("token")) {
		addr := clientAddr(c)
		s.wrongToken(addr)
		c.Header("Content-Security-Policy", loginCSP)
		if !s.logins.allow(addr, time.Now()) {
			c.Header("Retry-After", "60")
			page := loginPageHTML(next, `<p class="error">Too many wrong tokens: try again in a minute.</p>`)
			c.Data(http.StatusTooManyRequests, "text/html; charset=utf-8", page)
			return
		}
		c.Data(http.StatusUnauthorized, "text/html; charset=utf-8", loginPageHTML(next, `<p class="error">Wrong token.</p>`))
		return
	}
	expiry := time.Now().Add(sessionLife)
	http.SetCookie(c.Writer, &http.Cookie{Name: sessionCookie, Value: s.sessions.open(expiry), Path: "/",
		Expires: expiry, HttpOnly: true, Secure: s.opts.TLS != nil, SameSite: http.SameSiteStrictMode})
	// Not c.Redirect: http.Redirect cleans the path, # and all.
	c.Header("Location", dashboardPath+next)
	c.Status(http.StatusSeeOther)
}

// logout ends the dashboard's session and shows the login form.
func (s *Server) logout(c *gin.Context) {
	if v, err := c.Cookie(sessionCookie); err == nil {
		s.sessions.close(v, time.Now())
	}
	http.SetCookie(c.Writer, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.opts.TLS != nil, SameSite: http.SameSiteStrictMode})
	c.Redirect(http.StatusSeeOther, dashboardPath+"login")
}
