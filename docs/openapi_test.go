package docs_test

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/docs"
	"github.com/gmq/gmq/web"
)

// notAPI are the routes docs/openapi.yaml leaves out on purpose: the
// dashboard's pages, files and session (HTML and a cookie, not the API).
func notAPI(route string) bool {
	_, path, _ := strings.Cut(route, " ")
	return path == "/" || path == "/dashboard" || strings.HasPrefix(path, "/dashboard/")
}

// docs/openapi.yaml is a valid OpenAPI 3.1 document, describes every route
// the HTTP front end registers, and the broker serves it.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if ok, problems := v.ValidateDocument(); !ok {
		for _, p := range problems {
			t.Errorf("docs/openapi.yaml: %s: %s", p.Message, p.Reason)
			for _, e := range p.SchemaValidationErrors {
				t.Errorf("  at %s (line %d): %s", e.FieldPath, e.Line, e.Reason)
			}
		}
	}
	if len(errs) > 0 {
		t.Fatalf("docs/openapi.yaml: %v", errs)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	b := brokertest.Fresh(t, nil)
	srv := web.New(b.Dispatcher, web.Options{Metrics: http.NotFoundHandler(), OpenAPI: docs.OpenAPI})
	param := regexp.MustCompile(`:([a-z]+)`)
	described := 0
	for _, route := range srv.Routes() {
		if notAPI(route) {
			continue
		}
		method, path, _ := strings.Cut(route, " ")
		item, ok := model.Model.Paths.PathItems.Get(param.ReplaceAllString(path, "{$1}"))
		if !ok || item.GetOperations().GetOrZero(strings.ToLower(method)) == nil {
			t.Errorf("docs/openapi.yaml does not describe %s", route)
			continue
		}
		described++
	}
	if described < 30 {
		t.Errorf("only %d routes described", described)
	}
	resp, err := http.Get(b.URL + "/api/v1/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(served, docs.OpenAPI) {
		t.Errorf("GET /api/v1/openapi.yaml: %d, %d bytes; want docs/openapi.yaml", resp.StatusCode, len(served))
	}
}

// Real requests and the broker's real answers validate against
// docs/openapi.yaml: a producer's and a consumer's day, failures, the dead
// set, topics and the server's own routes, errors included.
func TestOpenAPIMatchesRealAnswers(t *testing.T) {
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// Samples every 50 ms: the history's answers have some to validate.
	b := brokertest.Fresh(t, func(c *config.Config) { c.HistoryEvery = 50 * time.Millisecond })
	steps := []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/api/v1/jobs", `{"topic":"mail","body":"hi","id":"order-42","delay":0,"TTR":30,"priority":10}`, 201},
		{"POST", "/api/v1/jobs", `{"topic":"mail","body":"hi","id":"order-42"}`, 409},
		{"POST", "/api/v1/jobs", `{"topic":"mail","body":"hi","dealy":5}`, 400},
		{"POST", "/api/v1/jobs/batch", `{"jobs":[{"topic":"mail","body":"1"},{"topic":"sms","body":"2","ttr":"60"}]}`, 201},
		{"POST", "/api/v1/jobs", `{"topic":"json","body":{"to":"a","n":[1]},"id":"json-1","delay":60}`, 201},
		{"GET", "/api/v1/jobs/json-1", "", 200},
		{"PATCH", "/api/v1/jobs/json-1", `{"body":[1,"two"],"delay":0}`, 200},
		{"GET", "/api/v1/topics/json/jobs?state=ready", "", 200},
		{"GET", "/api/v1/pop?topic=json&timeout=1", "", 200},
		{"GET", "/api/v1/jobs/order-42", "", 200},
		{"GET", "/api/v1/jobs/nobody", "", 404},
		{"GET", "/api/v1/pop?topic=mail&timeout=1", "", 200},
		{"POST", "/api/v1/jobs/order-42/touch", `{"attempt":1}`, 200},
		{"POST", "/api/v1/jobs/order-42/release", `{"attempt":1,"delay":0,"priority":5}`, 200},
		{"POST", "/api/v1/pop", `{"topics":["mail"],"count":5,"timeout":1}`, 200},
		{"POST", "/api/v1/jobs/order-42/ack", `{"attempt":1}`, 409},
		{"POST", "/api/v1/jobs/order-42/bury", `{"attempt":2}`, 200},
		{"POST", "/api/v1/jobs/order-42/kick", "", 200},
		{"POST", "/api/v1/jobs/order-42/ack", `{"attempt":2}`, 409}, // buried by that delivery, then kicked: not its to ack
		{"GET", "/api/v1/pop?topic=mail&timeout=1", "", 200},
		{"POST", "/api/v1/jobs/order-42/ack", `{"attempt":3,"next":{"topics":["mail"],"timeout":0.2}}`, 204},
		{"POST", "/api/v1/pop", `{"topics":["sms"],"timeout":1}`, 200},
		{"POST", "/api/v1/ack", `{"jobs":[{"id":"nobody","attempt":1}],"next":{"topics":["empty"],"count":2,"timeout":0.1}}`, 200},
		{"GET", "/api/v1/pop?topic=empty&timeout=0.1", "", 204},
		{"POST", "/api/v1/jobs", `{"topic":"flaky","body":"x","id":"f-1","retry":{"max_attempts":1}}`, 201},
		{"POST", "/api/v1/pop", `{"topics":["flaky"],"timeout":1}`, 200},
		{"POST", "/api/v1/jobs/f-1/fail", `{"attempt":1,"error":"boom"}`, 200},
		{"POST", "/api/v1/fail", `{"jobs":[{"id":"nobody","attempt":1,"error":"boom"}]}`, 200},
		{"GET", "/api/v1/topics/flaky/dead?limit=10", "", 200},
		{"POST", "/api/v1/topics/flaky/dead/retry", `{}`, 200},
		{"DELETE", "/api/v1/topics/flaky/dead", "", 200},
		{"GET", "/api/v1/topics?limit=10", "", 200},
		{"GET", "/api/v1/topics/mail", "", 200},
		{"GET", "/api/v1/topics/mail/jobs?state=ready&limit=10", "", 200},
		{"GET", "/api/v1/topics/sms/peek/ready", "", 404},
		{"GET", "/api/v1/topics/mail/config", "", 200},
		{"PUT", "/api/v1/topics/mail/config", `{"max_attempts":3}`, 200},
		{"POST", "/api/v1/topics/mail/pause", `{"seconds":0}`, 200},
		{"POST", "/api/v1/topics/mail/kick", `{"bound":1}`, 200},
		{"POST", "/api/v1/topics/mail/purge", `{"states":["ready","delayed"]}`, 200},
		{"POST", "/api/v1/topics/mail/flush", "", 200},
		{"DELETE", "/api/v1/jobs/nobody", "", 404},
		{"DELETE", "/api/v1/topics/mail", "", 200},
		{"GET", "/api/v1/stats", "", 200},
		{"GET", "/api/v1/history", "", 200},
		{"GET", "/api/v1/history?topic=sms&topic=mail", "", 200},
		{"GET", "/api/v1/history?topic=-bad", "", 400},
		{"GET", "/api/v1/status", "", 200},
		{"PUT", "/api/v1/status", `{"status":"up"}`, 200},
		{"GET", "/api/v1/buckets", "", 200},
		{"GET", "/api/v1/redis", "", 200},
		{"GET", "/healthz", "", 200},
		{"GET", "/readyz", "", 200},
	}
	for _, s := range steps {
		req, resp := roundTrip(t, s.method, b.URL+s.path, s.body)
		if resp.StatusCode != s.want {
			t.Errorf("%s %s: %d, want %d", s.method, s.path, resp.StatusCode, s.want)
		}
		if ok, problems := v.ValidateHttpRequestResponse(req, resp); !ok {
			for _, p := range problems {
				t.Errorf("%s %s (%d): %s: %s", s.method, s.path, resp.StatusCode, p.Message, p.Reason)
			}
		}
	}
}

// roundTrip sends a request and returns it and its answer with their
// bodies readable again, for the validator.
func roundTrip(t *testing.T, method, url, body string) (*http.Request, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	again, _ := http.NewRequest(method, url, strings.NewReader(body))
	again.Header = req.Header.Clone()
	if !slices.Contains([]int{200, 201, 204}, resp.StatusCode) && len(answer) == 0 {
		t.Errorf("%s %s: %d with no body", method, url, resp.StatusCode)
	}
	return again, resp
}
