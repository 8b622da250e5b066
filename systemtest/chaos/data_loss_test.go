package chaos

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// Redis restarted empty while consumers hold jobs, over HTTP and beanstalkd
// (issue 20: the broker showed no sign, and after a broker restart ids were
// handed out again from the start, so an old consumer's late ack deleted a
// new job with the same id). Now the running broker notices the loss (log,
// stats, metric) and writes conf.ini's topic settings again, and job numbers
// never repeat, so no stale ack, touch, fail or release reaches a new job,
// even after the broker restarts. Client ids may repeat (a producer pushes
// its job again): a late call carrying its delivery's token reaches nothing
// (issue 31), one without it reaches the new job of that id.
func TestRedisDataLoss(t *testing.T) {
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	conf := "[redis]\nbuckets = 4\n[bucket]\nmax_sleep = 200ms\n[topic.t]\nmax_items = 1000\n"
	b.RestartWith("", conf)
	// A second broker on the same Redis and conf.ini: whichever notices
	// first makes the record anew, and the other must still see the loss (a
	// changed epoch, not a missing one).
	other := harness.StartBroker(t, srv.URL())
	other.RestartWith("", conf)

	// An HTTP consumer and a beanstalkd consumer each hold four jobs.
	type held struct {
		id      string
		attempt float64
	}
	var heldHTTP []held
	for range 4 {
		b.Must(201, "POST", "/api/v1/jobs", `{"topic":"t","body":"old","ttr":60}`)
		j := b.Must(200, "POST", "/api/v1/pop", `{"topics":["t"],"timeout":1}`)
		heldHTTP = append(heldHTTP, held{j["id"].(string), j["attempt"].(float64)})
	}
	// The HTTP consumer also holds two jobs its producer named (client ids),
	// and keeps each one's token.
	tokens := map[string]string{}
	for _, id := range []string{"order-42", "order-43"} {
		b.Must(201, "POST", "/api/v1/jobs", `{"id":"`+id+`","topic":"orders","body":"old","ttr":60}`)
		j := b.Must(200, "POST", "/api/v1/pop", `{"topics":["orders"],"timeout":1}`)
		if j["id"] != id || j["attempt"] != 1.0 || j["token"] == nil {
			t.Fatalf("pop of %s: %v", id, j)
		}
		tokens[id] = j["token"].(string)
	}
	oldConn := dialBeanstalk(t, b.Beanstalk)
	oldConn.must("use bt", "USING bt")
	oldConn.must("watch bt", "WATCHING 2")
	var heldBeanstalk []string
	for range 4 {
		oldConn.must("put 0 0 60 3\r\nold", "INSERTED ")
		heldBeanstalk = append(heldBeanstalk, strings.Fields(oldConn.must("reserve-with-timeout 1", "RESERVED "))[1])
		oldConn.line() // the body
	}

	if err := srv.RestartEmpty(); err != nil {
		t.Fatal(err)
	}

	// Both running brokers say so, once each, and conf.ini's topic settings
	// are back.
	deadline := time.Now().Add(time.Minute) // only for a broker that never sees it
	for _, broker := range []*harness.BrokerProc{b, other} {
		for {
			a, err := broker.Do("GET", "/api/v1/stats", "")
			if err == nil && a.Code == 200 && a.Body["store_data_lost"] == 1.0 && a.Body["store_data_lost_at"] != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no sign of the lost data in the stats: %v %v\n%s", a.Body, err, broker.Log)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(broker.Log.String(), "Redis lost gmq's data") {
			t.Errorf("a broker's log does not say the data was lost:\n%s", broker.Log)
		}
		if m := metricsText(t, broker); !strings.Contains(m, "\ngmq_store_data_lost_total 1\n") {
			t.Errorf("metrics without gmq_store_data_lost_total 1:\n%s", m)
		}
	}
	for time.Now().Before(deadline) {
		settings := b.Must(200, "GET", "/api/v1/topics/t/config", "")["settings"].(map[string]any)
		if settings["max_items"] == 1000.0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if settings := b.Must(200, "GET", "/api/v1/topics/t/config", "")["settings"].(map[string]any); settings["max_items"] != 1000.0 {
		t.Errorf("conf.ini's topic settings not written again: %v", settings)
	}
	// The old beanstalkd consumer, still connected, reaches nothing.
	for _, id := range heldBeanstalk {
		oldConn.must("touch "+id, "NOT_FOUND")
		oldConn.must("delete "+id, "NOT_FOUND")
	}

	// The broker restarts too: numbers must not start over.
	b.Kill()
	b.Start()
	old := map[string]bool{}
	for _, h := range heldHTTP {
		old[h.id] = true
	}
	for _, id := range heldBeanstalk {
		old[id] = true
	}
	const n = 40
	var fresh []held // HTTP jobs, popped by a new consumer
	for range n {
		id := b.Must(201, "POST", "/api/v1/jobs", `{"topic":"t","body":"new","ttr":60}`)["id"].(string)
		if old[id] {
			t.Fatalf("new job %s has the number of a lost one", id)
		}
	}
	for range n {
		j := b.Must(200, "POST", "/api/v1/pop", `{"topics":["t"],"timeout":1}`)
		fresh = append(fresh, held{j["id"].(string), j["attempt"].(float64)})
	}
	newConn := dialBeanstalk(t, b.Beanstalk)
	newConn.must("use bt", "USING bt")
	for range n {
		id := strings.Fields(newConn.must("put 0 0 60 3\r\nnew", "INSERTED "))[1]
		if old[id] {
			t.Fatalf("new beanstalkd job %s has the number of a lost one", id)
		}
	}

	// Every stale call finds nothing, over both protocols.
	for _, h := range heldHTTP {
		for _, call := range []struct{ verb, body string }{
			{"ack", `{"attempt":%g}`}, {"touch", `{"attempt":%g}`},
			{"fail", `{"attempt":%g,"error":"late"}`}, {"release", `{"attempt":%g}`},
		} {
			b.Must(404, "POST", "/api/v1/jobs/"+h.id+"/"+call.verb, fmt.Sprintf(call.body, h.attempt))
		}
	}
	for _, id := range heldBeanstalk {
		newConn.must("delete "+id, "NOT_FOUND")
		newConn.must("touch "+id, "NOT_FOUND")
		newConn.must("release "+id+" 0 0", "NOT_FOUND")
		newConn.must("bury "+id+" 0", "NOT_FOUND")
		newConn.must("kick-job "+id, "NOT_FOUND")
	}

	// A client id is the producer's name for a job, and the docs tell a
	// producer to push again what it is not sure was stored: after the loss
	// "order-42" is a new job, at attempt 1 once popped, as the lost one
	// was. The old consumer's late calls carry its token, which names the
	// lost job by its number: they find nothing, and never reach the new one.
	const order = "/api/v1/jobs/order-42/"
	late := tokens["order-42"]
	b.Must(201, "POST", "/api/v1/jobs", `{"id":"order-42","topic":"orders","body":"new","ttr":60}`)
	b.Must(404, "POST", order+"ack", `{"attempt":1,"token":"`+late+`"}`)
	if j := b.Must(200, "GET", "/api/v1/jobs/order-42", ""); j["state"] != "ready" || j["body"] != "new" {
		t.Fatalf("the new order-42 after a late ack with the lost job's token: %v", j)
	}
	j := b.Must(200, "POST", "/api/v1/pop", `{"topics":["orders"],"timeout":1}`)
	if j["id"] != "order-42" || j["attempt"] != 1.0 || j["token"] == late {
		t.Fatalf("pop of the new order-42: %v (the lost one's token: %s)", j, late)
	}
	for _, verb := range []string{"ack", "touch", "release", "bury", "fail"} {
		b.Must(404, "POST", order+verb+"?token="+late, `{"attempt":1}`)
	}
	if got := b.Must(200, "GET", "/api/v1/jobs/order-42", ""); got["state"] != "reserved" || got["attempt"] != 1.0 {
		t.Fatalf("the new order-42 after the lost one's late calls: %v", got)
	}
	b.Must(200, "POST", order+"ack", `{"attempt":1,"token":"`+j["token"].(string)+`"}`)
	b.Must(404, "GET", "/api/v1/jobs/order-42", "")

	// The hazard tokens close, kept as the contrast: a late ack WITHOUT its
	// token names only the client id and the attempt, which the new
	// "order-43" shares once a new consumer pops it, so it deletes that job
	// unprocessed. (Clients send the token for this reason; a call without
	// one acts on the job as the id names it now, as it always did.)
	b.Must(201, "POST", "/api/v1/jobs", `{"id":"order-43","topic":"orders","body":"new","ttr":60}`)
	if j := b.Must(200, "POST", "/api/v1/pop", `{"topics":["orders"],"timeout":1}`); j["id"] != "order-43" || j["attempt"] != 1.0 {
		t.Fatalf("pop of the new order-43: %v", j)
	}
	b.Must(200, "POST", "/api/v1/jobs/order-43/ack", `{"attempt":1}`) // the lost job's consumer, late
	b.Must(404, "GET", "/api/v1/jobs/order-43", "")                   // the new job is gone, never done

	// No new job was touched: the new consumer acks each of its own, and the
	// beanstalkd tube holds all it was given.
	for _, h := range fresh {
		b.Must(200, "POST", "/api/v1/jobs/"+h.id+"/ack", fmt.Sprintf(`{"attempt":%g}`, h.attempt))
	}
	if stats := newConn.must("stats-tube bt", "OK "); !strings.Contains(newConn.block(stats), fmt.Sprintf("current-jobs-ready: %d\n", n)) {
		t.Errorf("tube bt lost jobs to stale calls")
	}
}

// metricsText is the broker's /metrics page.
func metricsText(t *testing.T, b *harness.BrokerProc) string {
	t.Helper()
	resp, err := http.Get(b.URL("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// beanstalkConn is a raw beanstalkd client: a line out, a line back.
type beanstalkConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialBeanstalk(t *testing.T, addr string) *beanstalkConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &beanstalkConn{t: t, c: c, r: bufio.NewReader(c)}
}

// must sends cmd and fails the test unless the answer starts with want; it
// returns the answer's line.
func (b *beanstalkConn) must(cmd, want string) string {
	b.t.Helper()
	_ = b.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(b.c, "%s\r\n", cmd); err != nil {
		b.t.Fatal(err)
	}
	got := b.line()
	if !strings.HasPrefix(got, want) {
		b.t.Fatalf("%q: answered %q, want %q", cmd, got, want)
	}
	return got
}

func (b *beanstalkConn) line() string {
	b.t.Helper()
	s, err := b.r.ReadString('\n')
	if err != nil {
		b.t.Fatal(err)
	}
	return strings.TrimRight(s, "\r\n")
}

// block reads the body an "OK <bytes>" line announces.
func (b *beanstalkConn) block(ok string) string {
	b.t.Helper()
	var n int
	if _, err := fmt.Sscanf(ok, "OK %d", &n); err != nil {
		b.t.Fatal(err)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(b.r, buf); err != nil {
		b.t.Fatal(err)
	}
	return string(buf[:n])
}

// conf.ini's schedules come back after Redis loses its data, on every
// broker, as its topic settings do, and fire again; a schedule made with
// PUT is lost with the data, as jobs are (issue 31: the list stayed empty
// and nothing fired until a SIGHUP or a restart).
func TestConfSchedulesRestoredAfterDataLoss(t *testing.T) {
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	srv := redistest.Start(t)
	conf := "[redis]\nbuckets = 4\n[bucket]\nmax_sleep = 200ms\n" +
		"[schedule.beat]\ncron = * * * * * *\ntopic = beats\nbody = x\n"
	brokers := []*harness.BrokerProc{harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())}
	for _, b := range brokers {
		b.RestartWith("", conf)
	}
	brokers[0].Must(200, "PUT", "/api/v1/schedules/made", `{"cron":"0 3 * * *","job":{"topic":"r","body":"x"}}`)
	harness.WaitUntil(t, "beat fires", func() bool {
		return brokers[0].Must(200, "GET", "/api/v1/schedules/beat", "")["fires"].(float64) >= 1
	})

	if err := srv.RestartEmpty(); err != nil {
		t.Fatal(err)
	}
	for _, b := range brokers {
		harness.WaitUntil(t, "beat listed again", func() bool {
			a, err := b.Do("GET", "/api/v1/schedules", "")
			if err != nil || a.Code != 200 {
				return false
			}
			list, _ := a.Body["schedules"].([]any)
			return len(list) == 1 && list[0].(map[string]any)["name"] == "beat"
		})
	}
	// It fires again: a job of beats is made after the loss.
	harness.WaitUntil(t, "beat's job after the loss", func() bool {
		a, err := brokers[1].Do("GET", "/api/v1/topics/beats", "")
		return err == nil && a.Code == 200 && a.Body["ready"].(float64) >= 1
	})
	brokers[1].Must(404, "GET", "/api/v1/schedules/made", "")
	for _, b := range brokers { // each sees the loss at its own next look, which may come after the other's rewrite
		harness.WaitForLog(t, b, "writing conf.ini's topic settings and schedules again")
	}
}
