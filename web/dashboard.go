package web

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// dashboardPath is where the dashboard is served; "/" redirects there.
const dashboardPath = "/dashboard/"

// The dashboard's files, built into the binary: it needs no network.
//
//go:embed dashboard
var dashboardFiles embed.FS

// dashboardCSP is the dashboard's Content-Security-Policy: its own files
// only (no inline script or style), nothing framing it.
const dashboardCSP = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"

// The dashboard's page says whether this broker requires a token, in its
// <html data-auth>: authNone as index.html is written, authToken when a
// token is set. The page shows "Sign out" only with a token.
var (
	authNone  = []byte(`data-auth="none"`)
	authToken = []byte(`data-auth="token"`)
)

func (s *Server) dashboardRoutes() {
	files, err := fs.Sub(dashboardFiles, "dashboard")
	if err != nil {
		panic(err) // the embedded directory is fixed at compile time
	}
	index, err := fs.ReadFile(files, "index.html")
	if err != nil || !bytes.Contains(index, authNone) {
		panic("dashboard/index.html must hold " + string(authNone)) // fixed at compile time too
	}
	if s.opts.Token != "" {
		index = bytes.Replace(index, authNone, authToken, 1)
	}
	static := http.StripPrefix(dashboardPath, http.FileServer(http.FS(files)))
	s.engine.GET("/", func(c *gin.Context) { c.Redirect(http.StatusFound, dashboardPath) })
	s.engine.GET("/dashboard", func(c *gin.Context) { c.Redirect(http.StatusMovedPermanently, dashboardPath) })
	// One route for the whole directory (gin allows no fixed route beside a
	// catch-all): the login form and its stylesheet need no token.
	s.engine.POST("/dashboard/*file", s.sameOrigin, func(c *gin.Context) {
		switch c.Param("file") {
		case "/login":
			s.login(c)
		case "/logout":
			s.logout(c)
		default:
			c.AbortWithStatusJSON(http.StatusNotFound, gin.H{"error": "no such endpoint: " + c.Request.URL.Path})
		}
	})
	s.engine.GET("/dashboard/*file", func(c *gin.Context) {
		switch c.Param("file") {
		case "/login":
			s.loginPage(c)
			return
		case "/style.css":
		default:
			if s.requireToken(c); c.IsAborted() {
				return
			}
		}
		c.Header("Content-Security-Policy", dashboardCSP)
		if c.Param("file") == "/" {
			c.Data(http.StatusOK, "text/html; charset=utf-8", index)
			return
		}
		static.ServeHTTP(c.Writer, c.Request)
	})
}

func (s *Server) buckets(c *gin.Context) (int, any, error) {
	list, err := s.d.Buckets(c)
	if err != nil {
		return 0, nil, err
	}
	out := make([]gin.H, len(list))
	for i, b := range list {
		v := gin.H{"bucket": b.Bucket, "topics": b.Topics, "next_wake": b.NextWake.UTC().Format(time.RFC3339Nano), "node": b.Node}
		if !b.NextDue.IsZero() {
			v["next_due"] = b.NextDue.UTC().Format(time.RFC3339Nano)
		}
		out[i] = v
	}
	return http.StatusOK, gin.H{"buckets": out}, nil
}

func (s *Server) redisInfo(c *gin.Context) (int, any, error) {
	info, err := s.d.Store().Info(c)
	if err != nil {
		return 0, nil, err
	}
	nodes := []gin.H{}
	for _, n := range s.d.Store().Nodes(c) {
		v := gin.H{"addr": n.Addr, "role": n.Role, "used_memory": n.UsedMemory, "slots": n.Slots}
		if n.RTT > 0 {
			v["rtt_ms"] = float64(n.RTT.Microseconds()) / 1000
		}
		if n.Err != "" {
			v["error"] = n.Err
		}
		nodes = append(nodes, v)
	}
	return http.StatusOK, gin.H{"used_memory": info.UsedMemory, "rtt_ms": float64(info.RTT.Microseconds()) / 1000,
		"version": info.Version, "url": s.opts.RedisURL, "nodes": nodes}, nil
}
