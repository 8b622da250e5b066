package broker_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/redistest"
)

// call and mustCall send a request and decode its JSON answer.
var call, mustCall = brokertest.Call, brokertest.MustCall

// The broker's behaviour on a real Redis Cluster (3 masters, 3 replicas),
// two brokers on it: every script keeps to one slot (a CROSSSLOT error
// would fail the call), client ids live in other slots than their jobs, and
// a long poll on one broker is woken by a push on the other.
func TestOnRedisCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	conf := func(cfg *config.Config) { cfg.Buckets = 16 }
	a := brokertest.StartURL(t, c.URL(), conf)
	b := brokertest.StartURL(t, c.URL(), conf)
	api, bapi := a.URL+"/api/v1", b.URL+"/api/v1"

	// Jobs over many topics (so over every master), with client ids.
	for i := range 40 {
		mustCall(t, 201, "POST", api+"/jobs", fmt.Sprintf(`{"id":"job-%d","topic":"t%d","body":"%d","TTR":30}`, i, i%8, i))
	}
	mustCall(t, 201, "POST", api+"/jobs/batch", `{"jobs":[{"topic":"t0","body":"b1"},{"topic":"t5","body":"b2","delay":0.2}]}`)
	for i := range 8 {
		j := mustCall(t, 200, "GET", fmt.Sprintf("%s/pop?topic=t%d", bapi, i), ``)
		mustCall(t, 200, "POST", bapi+"/jobs/"+j["id"].(string)+"/ack", fmt.Sprintf(`{"attempt":%v}`, j["attempt"]))
	}
	mustCall(t, 404, "GET", api+"/jobs/job-0", ``) // acked through the other broker, by its client id
	// release, bury, kick, touch, pause, fail, TTR redelivery.
	j := mustCall(t, 200, "GET", api+"/pop?topic=t1", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/release", `{"delay":0.1}`)
	j = mustCall(t, 200, "GET", api+"/pop?topic=t2", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/bury", ``)
	mustCall(t, 200, "POST", api+"/topics/t2/kick", `{}`)
	j = mustCall(t, 200, "GET", api+"/pop?topic=t3", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/touch", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/fail", `{"error":"no"}`)
	mustCall(t, 200, "POST", api+"/topics/t4/pause", `{"seconds":0.2}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"ttr","body":"x","TTR":0.3}`)
	first := mustCall(t, 200, "GET", api+"/pop?topic=ttr", ``)
	// The TTR runs out, the timers redeliver: the pop answers then, and waits
	// up to a minute only if they never do.
	again := mustCall(t, 200, "GET", bapi+"/pop?topic=ttr&timeout=60", ``)
	if again["id"] != first["id"] || again["attempt"] != 2.0 {
		t.Fatalf("TTR redelivery: %v after %v", again, first)
	}
	mustCall(t, 200, "POST", bapi+"/jobs/"+again["id"].(string)+"/ack", fmt.Sprintf(`{"attempt":%v}`, again["attempt"]))
	// A long poll on a, woken by a push on b. Nothing but a wake-up or its
	// 60 s timeout ends the poll, so an answer well before the timeout is a
	// wake-up; 30 s is the margin for a loaded machine.
	got := make(chan map[string]any, 1)
	go func() {
		_, j, _ := brokertest.Do("GET", api+"/pop?topic=wake&timeout=60", ``) // a goroutine: no t.Fatal
		got <- j
	}()
	brokertest.Eventually(t, "the long poll waits on a", func() bool { return a.Dispatcher.WaitingOn("wake") == 1 })
	start := time.Now()
	mustCall(t, 201, "POST", bapi+"/jobs", `{"topic":"wake","body":"across"}`)
	select {
	case j := <-got:
		if j["body"] != "across" || time.Since(start) > 30*time.Second {
			t.Fatalf("long poll: %v after %v", j, time.Since(start))
		}
		mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/ack", ``)
	case <-time.After(90 * time.Second):
		t.Fatal("the long poll was not woken")
	}
	// Issue 23's keys on the cluster, each in its topic's slot: a unique key,
	// a grouped topic's queues and ring, a schedule's hash and due entry.
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"u","body":"x","unique":{"key":"k","for":60}}`)
	mustCall(t, 409, "POST", bapi+"/jobs", `{"topic":"u","body":"x","unique":{"key":"k","for":60}}`)
	mustCall(t, 201, "POST", api+"/jobs/batch", `{"jobs":[{"topic":"g","body":"a","group":"a"},{"topic":"g","body":"a","group":"a"},{"topic":"g","body":"b","group":"b"}]}`)
	if first, second := mustCall(t, 200, "GET", bapi+"/pop?topic=g", ``), mustCall(t, 200, "GET", bapi+"/pop?topic=g", ``); first["body"] != "a" || second["body"] != "b" {
		t.Fatalf("groups in turn on the cluster: %v then %v", first["body"], second["body"])
	}
	mustCall(t, 200, "PUT", api+"/schedules/s", `{"cron":"* * * * * *","job":{"topic":"sch","body":"tick"}}`)
	mustCall(t, 200, "GET", bapi+"/pop?topic=sch&timeout=60", ``) // the first tick: within a second, or later on a loaded machine
	mustCall(t, 200, "PUT", bapi+"/schedules/s", `{"paused":true}`)
	for _, topic := range []string{"u", "g", "sch"} {
		for {
			code, j := call(t, "GET", bapi+"/pop?topic="+topic, ``)
			if code == 204 {
				break
			}
			mustCall(t, 200, "POST", bapi+"/jobs/"+j["id"].(string)+"/ack", ``)
		}
	}
	for _, topic := range []string{"g", "sch"} { // the ones popped above, still reserved
		for {
			code, j := call(t, "GET", bapi+"/topics/"+topic+"/jobs?state=reserved", ``)
			list, _ := j["jobs"].([]any)
			if code != 200 || len(list) == 0 {
				break
			}
			mustCall(t, 200, "DELETE", bapi+"/jobs/"+list[0].(map[string]any)["id"].(string), ``)
		}
	}
	// Every topic drained: every job in exactly one state, on the cluster.
	// The delayed and released jobs, the pause and the failed job's 1 s
	// backoff end in their own time (later on a loaded machine): drain
	// until the stats show none left anywhere.
	brokertest.Eventually(t, "every topic drained", func() bool {
		for i := range 8 {
			for {
				code, j := call(t, "GET", fmt.Sprintf("%s/pop?topic=t%d", bapi, i), ``)
				if code == 204 {
					break
				}
				mustCall(t, 200, "POST", bapi+"/jobs/"+j["id"].(string)+"/ack", ``)
			}
		}
		st := mustCall(t, 200, "GET", api+"/stats", ``)
		return st["current_jobs_ready"] == 0.0 && st["current_jobs_reserved"] == 0.0 && st["current_jobs_delayed"] == 0.0
	})
	if problems, err := a.Pool.Check(t.Context()); err != nil || len(problems) > 0 {
		t.Fatalf("check on the cluster: %v %v", problems, err)
	}
	// The operator sees every node and where each bucket lives.
	redis := mustCall(t, 200, "GET", api+"/redis", ``)
	if nodes, _ := redis["nodes"].([]any); len(nodes) != 6 {
		t.Fatalf("/api/v1/redis nodes: %v", redis["nodes"])
	}
	buckets, _ := mustCall(t, 200, "GET", api+"/buckets", ``)["buckets"].([]any)
	spread := map[any]bool{}
	for _, bk := range buckets {
		spread[bk.(map[string]any)["node"]] = true
	}
	if len(buckets) != 16 || len(spread) != 3 {
		t.Fatalf("16 buckets on %d masters: %v", len(spread), buckets)
	}
	st := mustCall(t, 200, "GET", api+"/stats", ``)
	if st["current_jobs_ready"] != 0.0 || st["current_jobs_reserved"] != 0.0 || st["current_jobs_delayed"] != 0.0 {
		t.Fatalf("stats: %v", st)
	}
}

// A master of the cluster SIGKILLed under load: its replica is promoted and
// the brokers keep serving (503s meanwhile, no restart). Replication is
// asynchronous, so writes the dead master acknowledged but had not yet sent
// to its replica are lost: the test counts pushed, acked, lost and
// duplicated jobs and reports them (docs/PERFORMANCE.md), and requires that
// the brokers recover and the store stays consistent.
func TestClusterMasterFailover(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	b := brokertest.StartURL(t, c.URL(), func(cfg *config.Config) { cfg.Buckets = 16 })
	// Replication is asynchronous: a push acknowledged in the master's last
	// moments may be lost with it. A tenth would be more than that window.
	runFailover(t, b, "cluster failover", 1500, 1500/10, c.Nodes[0].Kill, clusterDiagnosis(t, c))
}

// With [redis] wait_replicas = 1 a push is answered only once a replica
// holds it, so the failover loses none: the strict count. Each master has
// two replicas, so the promoted one still has a replica to confirm pushes
// (the other follows it); until it has, its pushes answer 503 and are retried.
func TestClusterFailoverWaitReplicas(t *testing.T) {
	c := redistest.StartCluster(t, 3, 2)
	b := brokertest.StartURL(t, c.URL(), func(cfg *config.Config) {
		cfg.Buckets, cfg.WaitReplicas, cfg.WaitTimeout = 16, 1, 500*time.Millisecond
	})
	runFailover(t, b, "cluster failover, wait_replicas 1", 1500, 0, c.Nodes[0].Kill, clusterDiagnosis(t, c))
}

// clusterDiagnosis logs the cluster's view of its nodes and the replicas' logs.
func clusterDiagnosis(t *testing.T, c *redistest.Cluster) func() {
	return func() {
		out, _ := c.Nodes[1].CLI("cluster", "nodes")
		t.Logf("cluster nodes:\n%s", out)
		for _, n := range c.Nodes[3:] {
			t.Logf("replica %s log:\n%s", n.Addr, n.Log(1500))
		}
	}
}

// runFailover pushes and consumes jobs (that many) with client ids on broker b while
// kill takes Redis's master away; it reports pushed, acked, lost and
// duplicated jobs, and fails if the broker did not recover, if more than
// maxLost were lost (then diagnose says why), or if the store is inconsistent.
func runFailover(t *testing.T, b *brokertest.Broker, what string, jobs, maxLost int, kill func(), diagnose func()) {
	api := b.URL + "/api/v1"
	const topics = 12
	var mu sync.Mutex
	stored, acked, deliveries := map[string]bool{}, map[string]bool{}, map[string]int{}
	var unavailable atomic.Int64
	// until sends a request again until Redis is behind the answer (no
	// network error, no 503), counting the 503s, for at most 30 s.
	until := func(method, url, body string) int {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			code, _, err := brokertest.Do(method, url, body)
			if err == nil && code != 503 {
				return code
			}
			unavailable.Add(1)
		}
		t.Error("gave up retrying after 30 s")
		return 0
	}
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for i := p; i < jobs; i += 4 {
				id := fmt.Sprintf("job-%d", i)
				if code := until("POST", api+"/jobs", fmt.Sprintf(`{"id":%q,"topic":"f%d","body":"x","TTR":3}`, id, i%topics)); code == 201 || code == 409 {
					mu.Lock()
					stored[id] = true
					mu.Unlock()
				}
			}
		})
	}
	stop := make(chan struct{})
	var consumers sync.WaitGroup
	topicList := make([]string, topics)
	for i := range topicList {
		topicList[i] = fmt.Sprintf("f%d", i)
	}
	popBody, _ := json.Marshal(map[string]any{"topics": topicList, "timeout": 0.5})
	for range 4 {
		consumers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, j, err := brokertest.Do("POST", api+"/pop", string(popBody))
				if err != nil || code == 503 {
					unavailable.Add(1)
					time.Sleep(20 * time.Millisecond)
					continue
				}
				if code != 200 {
					continue
				}
				id := j["id"].(string)
				mu.Lock()
				deliveries[id]++
				mu.Unlock()
				if code := until("POST", fmt.Sprintf("%s/jobs/%s/ack?attempt=%v", api, id, j["attempt"]), ``); code == 200 || code == 404 {
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(700 * time.Millisecond)
	kill() // its replica takes over after the timeout
	killed := time.Now()
	wg.Wait()
	// Drain: stop when every stored job is acked, or nothing moved for 10 s.
	brokertest.Settle(func() int {
		mu.Lock()
		defer mu.Unlock()
		missing := 0
		for id := range stored {
			if !acked[id] {
				missing++
			}
		}
		return missing
	}, 10*time.Second)
	close(stop)
	consumers.Wait()
	mu.Lock()
	lost, duplicated := 0, 0
	for id := range stored {
		if !acked[id] {
			lost++
		}
	}
	for _, n := range deliveries {
		if n > 1 {
			duplicated++
		}
	}
	mu.Unlock()
	t.Logf("%s: %d pushed (stored), %d acked, %d lost, %d delivered more than once, %d answers 503; all acked %v after the fault",
		what, len(stored), len(acked), lost, duplicated, unavailable.Load(), time.Since(killed).Round(time.Second))
	if len(stored) != jobs {
		t.Fatalf("%d of %d pushes stored: the brokers did not recover", len(stored), jobs)
	}
	if lost > maxLost {
		for id := range stored {
			if !acked[id] {
				code, j := call(t, "GET", api+"/jobs/"+id, ``)
				t.Logf("a missing job: %s: %d %v", id, code, j)
				break
			}
		}
		diagnose()
		t.Fatalf("%d jobs lost, more than %d", lost, maxLost)
	}
	if problems, err := b.Pool.Check(t.Context()); err != nil || len(problems) > 0 {
		t.Fatalf("check after the failover: %v %v", problems, err)
	}
}

// Redis Sentinel: a master, its replica and three sentinels; the master
// SIGKILLed under load, the sentinels promote the replica, and the broker
// follows (rueidis asks the sentinels) with no restart.
func TestSentinelFailover(t *testing.T) {
	s := redistest.StartSentinels(t)
	b := brokertest.StartURL(t, s.URL(), nil)
	runFailover(t, b, "sentinel failover", 1500, 1500/10, s.Master.Kill, func() {
		for _, w := range s.Watchers {
			t.Logf("sentinel %s log:\n%s", w.Addr, w.Log(1500))
		}
	})
}

// Slots moved between masters under load (redis-cli --cluster reshard):
// calls on a slot being moved are redirected or retried, and no job is
// lost or delivered twice.
func TestClusterSlotMigration(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	b := brokertest.StartURL(t, c.URL(), func(cfg *config.Config) { cfg.Buckets = 64 })
	reshard := func() {
		from, err1 := c.Nodes[0].CLI("cluster", "myid")
		to, err2 := c.Nodes[1].CLI("cluster", "myid")
		if err1 != nil || err2 != nil {
			t.Errorf("cluster myid: %v %v", err1, err2)
			return
		}
		start := time.Now()
		defer func() { t.Logf("reshard of 3,000 slots took %v", time.Since(start).Round(time.Millisecond)) }()
		out, err := exec.Command("redis-cli", "--cluster", "reshard", c.Nodes[0].Addr,
			"--cluster-from", strings.TrimSpace(string(from)), "--cluster-to", strings.TrimSpace(string(to)),
			"--cluster-slots", "3000", "--cluster-yes").CombinedOutput()
		if err != nil {
			t.Errorf("reshard: %v\n%s", err, out)
		}
	}
	runFailover(t, b, "slot migration", 6000, 0, reshard, func() {}) // enough jobs that the pushes outlast the reshard
}
