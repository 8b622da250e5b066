package broker_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gmq/gmq/broker"
	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/redistest"
)

// testCA makes a CA and a certificate it signs for 127.0.0.1 (a server's or
// a client's), written as PEM files in dir: ca.pem, cert.pem, key.pem.
func testCA(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gmq test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "redis.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"redis.test"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	caCert, _ := x509.ParseCertificate(caDER)
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(leafKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, kind string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("cert.pem", "CERTIFICATE", leafDER), write("key.pem", "EC PRIVATE KEY", keyDER)
}

// A broker talks to Redis over TLS (rediss://, the server's TLS port speaks
// nothing else), trusting the CA of [redis] tls_ca, with a client
// certificate, and checking the server's name.
func TestRedisOverTLS(t *testing.T) {
	ca, cert, key := testCA(t, t.TempDir())
	srv := redistest.StartTLS(t, ca, cert, key)
	b := brokertest.StartURL(t, "rediss://"+srv.TLSAddr, func(c *config.Config) {
		c.RedisTLSCA, c.RedisTLSCert, c.RedisTLSKey, c.RedisTLSServerName = ca, cert, key, "redis.test"
	})
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"tls","body":"secret"}`)
	if j := mustCall(t, 200, "GET", api+"/pop?topic=tls", ``); j["body"] != "secret" {
		t.Fatalf("pop over TLS: %v", j)
	}

	// Without the CA the server's certificate is not trusted: the broker
	// does not start.
	cfg := config.Default()
	cfg.RedisURL, cfg.ConnectTimeout = "rediss://"+srv.TLSAddr, 500*time.Millisecond
	cfg.RedisTLSServerName = "redis.test"
	if _, err := brokerNew(t, cfg); err == nil {
		t.Fatal("a broker trusting no CA of this server started")
	}
	// A CA file that holds no certificate is a clear error.
	cfg.RedisTLSCA = key
	if _, err := cfg.RedisTLS(); err == nil {
		t.Fatal("a tls_ca of no certificate was accepted")
	}
}

// brokerNew builds a broker from cfg (on free ports) and closes it if it
// was built.
func brokerNew(t *testing.T, cfg config.Config) (*broker.Broker, error) {
	t.Helper()
	cfg.HTTP, cfg.BeanstalkAddr, cfg.RPCAddr, cfg.KestrelAddr = "127.0.0.1:0", "", "", ""
	b, err := broker.New(t.Context(), cfg, broker.Options{Version: "test"})
	if err == nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = b.Run(ctx)
	}
	return b, err
}

// [server] tls_cert and tls_key: the HTTP API and the dashboard over HTTPS,
// the session cookie Secure.
func TestHTTPOverTLS(t *testing.T) {
	ca, cert, key := testCA(t, t.TempDir())
	b := brokertest.Fresh(t, func(c *config.Config) { c.TLSCert, c.TLSKey, c.Token = cert, key, "t0ken" })
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := "https://" + b.HTTPAddr
	req, _ := http.NewRequest("GET", base+"/api/v1/stats", nil)
	req.Header.Set("Authorization", "Bearer t0ken")
	resp, err := client.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HTTPS: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = client.PostForm(base+"/dashboard/login", url.Values{"token": {"t0ken"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cookies := resp.Cookies(); len(cookies) != 1 || !cookies[0].Secure {
		t.Fatalf("the session cookie over HTTPS: %v", cookies)
	}
	if resp, err := http.Get("http://" + b.HTTPAddr + "/healthz"); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP is served on the TLS port")
	}
}
