package web

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/internal/hostname"
)

// The guards below are what keeps a web page in the operator's browser from
// acting on a broker it can reach (on 127.0.0.1 by default, usually without a
// token): cross-site request forgery and DNS rebinding. Clients that are not
// browsers (curl, the client libraries) send no Origin and no Sec-Fetch-Site
// and pass untouched, as long as their writes say their body is JSON.

// securityHeaders forbid framing the dashboard or the API (clickjacking).
func securityHeaders(c *gin.Context) {
	c.Header("X-Frame-Options", "DENY")
	c.Header("Content-Security-Policy", "frame-ancestors 'none'")
	c.Header("X-Content-Type-Options", "nosniff")
}

// checkHost refuses a Host header that is not this loopback broker's, when
// the HTTP API listens on loopback only: a page on a rebound DNS name
// (evil.example resolving to 127.0.0.1) sends its own name, which the
// browser treats as a site of its own, origin checks and all. Names in
// [web] allowed_hosts are accepted too (a proxy's name).
func (s *Server) checkHost(c *gin.Context) {
	if !s.opts.Loopback || hostname.Local(c.Request.Host, s.opts.AllowedHosts) {
		return
	}
	c.AbortWithStatusJSON(http.StatusMisdirectedRequest, gin.H{"error": "this broker listens on loopback and answers only to loopback host names, not " +
		strconv.Quote(c.Request.Host) + " (add it to [web] allowed_hosts)"})
}

// sameOrigin refuses a request a browser sent from another origin: its
// Sec-Fetch-Site says so, or its Origin is not this host. Another port of the
// same host is another origin (SameSite cookies do not see that: they are per
// site, not per port). Every API request is checked, not only writes: a
// cross-site <img src=/api/v1/pop?...> would reserve a job.
func (s *Server) sameOrigin(c *gin.Context) {
	if site := c.GetHeader("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		s.refuseCrossOrigin(c, "Sec-Fetch-Site: "+site)
		return
	}
	origin := c.GetHeader("Origin")
	if origin == "" {
		return
	}
	if u, err := url.Parse(origin); err != nil || !strings.EqualFold(u.Host, c.Request.Host) {
		s.refuseCrossOrigin(c, "Origin: "+origin)
	}
}

func (s *Server) refuseCrossOrigin(c *gin.Context, why string) {
	c.AbortWithStatusJSON(http.StatusForbidden, gin.H{"error": "cross-origin request refused (" + why + ")"})
}

// requireJSON refuses an API write whose body is not declared JSON. A page
// on another origin can send a form or text/plain without asking the browser
// first, but not application/json; curl users pass --json (or -H
// 'Content-Type: application/json'). A write with no body needs no type.
func requireJSON(c *gin.Context) {
	switch c.Request.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return
	}
	if c.Request.ContentLength == 0 {
		return
	}
	ct := c.GetHeader("Content-Type")
	if ct == "application/json" { // what the clients send: no parsing on the hot path
		return
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return
	}
	c.AbortWithStatusJSON(http.StatusUnsupportedMediaType, gin.H{"error": "the body must be sent as Content-Type: application/json" +
		" (curl: --json '{...}'), got " + strconv.Quote(c.GetHeader("Content-Type"))})
}

// headAsGet serves HEAD wherever GET is served (net/http drops the body),
// except a GET pop, which would reserve a job nobody sees.
func headAsGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && headServedAsGet(r.URL.Path) {
			r = r.Clone(r.Context())
			r.Method = http.MethodGet
		}
		next.ServeHTTP(w, r)
	})
}

// headServedAsGet says headAsGet answers a HEAD of path as its GET: every
// path but the pop, whose GET takes a job.
func headServedAsGet(path string) bool { return path != "/api/v1/pop" }

// methodNotAllowed answers a request whose path takes other methods: 405,
// with Allow (which gin has set) naming them, HEAD too wherever GET is and
// headAsGet serves it.
func methodNotAllowed(c *gin.Context) {
	allow := strings.Split(c.Writer.Header().Get("Allow"), ", ")
	if slices.Contains(allow, http.MethodGet) && !slices.Contains(allow, http.MethodHead) && headServedAsGet(c.Request.URL.Path) {
		allow = append(allow, http.MethodHead)
	}
	c.Header("Allow", strings.Join(allow, ", "))
	c.JSON(http.StatusMethodNotAllowed, gin.H{"error": fmt.Sprintf("method %s is not allowed on %s; it takes %s",
		c.Request.Method, c.Request.URL.Path, strings.Join(allow, ", "))})
}
