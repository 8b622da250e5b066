package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// tokenCookie carries the token for the dashboard once its login form took it.
const tokenCookie = "gmq_token"

// requireToken lets a request through when no token is configured, or when it
// carries the token: "Authorization: Bearer <token>" or the dashboard's
// cookie. Otherwise the API answers 401 and the dashboard shows its login form.
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
	if given, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer "); ok && s.sameToken(given) {
		return true
	}
	cookie, err := c.Cookie(tokenCookie)
	return err == nil && s.sameToken(cookie)
}

// sameToken compares in constant time, hashing first so that not even the
// token's length leaks.
func (s *Server) sameToken(given string) bool {
	a, b := sha256.Sum256([]byte(given)), sha256.Sum256([]byte(s.opts.Token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
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
	if s.opts.Token == "" || !s.sameToken(c.PostForm("token")) {
		page := strings.Replace(loginForm, "%s", `<p class="error">Wrong token.</p>`, 1)
		c.Data(http.StatusUnauthorized, "text/html; charset=utf-8", []byte(page))
		return
	}
	http.SetCookie(c.Writer, &http.Cookie{Name: tokenCookie, Value: c.PostForm("token"), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode})
	c.Redirect(http.StatusSeeOther, dashboardPath)
}
