package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
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
// dashboard shows its login form.
func (s *Server) requireToken(c *gin.Context) {
	if s.opts.Token == "" || s.tokenOK(c) {
		return // gin runs the next handler
	}
	if strings.HasPrefix(c.Request.URL.Path, dashboardPath) {
		c.Redirect(http.StatusSeeOther, dashboardPath+"login")
		c.Abort()
		return
	}
	c.Header("WWW-Authenticate", `Bearer realm="gmq"`)
	c.AbortWithStatusJSON(http.StatusUnauthorized, gin.H{"error": "this gmq requires a token: send Authorization: Bearer <token>"})
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
	i := strings.LastIndexByte(value, '.')
	if i < 0 || !hmac.Equal([]byte(value[i+1:]), []byte(ss.mac(value[:i]))) {
		return false
	}
	exp, err := strconv.ParseInt(value[:strings.IndexByte(value, '.')], 10, 64)
	if err != nil || now.Unix() >= exp {
		return false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, closed := ss.closed[value]
	return !closed
}

// close ends a session on this broker (other brokers sharing the token
// accept it until it expires; the browser drops it at once).
func (ss *sessions) close(value string, now time.Time) {
	i := strings.IndexByte(value, '.')
	if i < 0 {
		return
	}
	exp, err := strconv.ParseInt(value[:i], 10, 64)
	if err != nil {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for v, e := range ss.closed { // forget the expired, so the set stays small
		if now.After(e) {
			delete(ss.closed, v)
		}
	}
	ss.closed[value] = time.Unix(exp, 0)
}

// loginLimit allows loginTries wrong tokens per client address per minute.
const loginTries = 5

// loginGuard counts wrong tokens per client address, per minute.
type loginGuard struct {
	mu     sync.Mutex
	window time.Time
	wrong  map[string]int
}

// allow says whether addr may try a token now.
func (g *loginGuard) allow(addr string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.window) >= time.Minute || g.wrong == nil {
		g.window, g.wrong = now, map[string]int{}
	}
	return g.wrong[addr] < loginTries
}

func (g *loginGuard) failed(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.wrong) < 100_000 { // a flood of addresses only fills it for a minute
		g.wrong[addr]++
	}
}

// loginForm is the dashboard's only page that needs no token.
const loginForm = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gmq · sign in</title>
<link rel="stylesheet" href="/dashboard/style.css"></head>
<body class="login"><form method="post" action="/dashboard/login">
<h1>gmq</h1><p>This broker requires its token.</p>
<input type="password" name="token" placeholder="token" autofocus required>
<button type="submit">Sign in</button>%s</form></body></html>`

func (s *Server) loginPage(c *gin.Context) {
	c.Data(http.StatusOK, "text/html; charset=utf-8", []byte(strings.Replace(loginForm, "%s", "", 1)))
}

func (s *Server) login(c *gin.Context) {
	addr, _, err := net.SplitHostPort(c.Request.RemoteAddr)
	if err != nil {
		addr = c.Request.RemoteAddr
	}
	if !s.logins.allow(addr, time.Now()) {
		c.Header("Retry-After", "60")
		page := strings.Replace(loginForm, "%s", `<p class="error">Too many wrong tokens: try again in a minute.</p>`, 1)
		c.Data(http.StatusTooManyRequests, "text/html; charset=utf-8", []byte(page))
		return
	}
	if s.opts.Token == "" || !s.sameToken(c.PostForm("token")) {
		s.logins.failed(addr)
		page := strings.Replace(loginForm, "%s", `<p class="error">Wrong token.</p>`, 1)
		c.Data(http.StatusUnauthorized, "text/html; charset=utf-8", []byte(page))
		return
	}
	expiry := time.Now().Add(sessionLife)
	http.SetCookie(c.Writer, &http.Cookie{Name: sessionCookie, Value: s.sessions.open(expiry), Path: "/",
		Expires: expiry, HttpOnly: true, Secure: s.opts.TLS != nil, SameSite: http.SameSiteStrictMode})
	c.Redirect(http.StatusSeeOther, dashboardPath)
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
