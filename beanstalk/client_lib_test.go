package beanstalk_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beanstalkd/go-beanstalk"
)

// A producer puts into several tubes with go-beanstalk; consumers reserve,
// delete, release, bury and kick, as beanstalkd's users do.
func TestGoBeanstalkClient(t *testing.T) {
	b := broker(t)
	producer, err := beanstalk.Dial("tcp", b.BeanstalkAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	tubes := []string{"emails", "images", "reports"}
	const perTube = 20
	for _, name := range tubes {
		tube := beanstalk.NewTube(producer, name)
		for i := range perTube {
			if _, err := tube.Put([]byte(fmt.Sprintf("%s-%d", name, i)), uint32(i%3), 0, 30*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	stats, err := beanstalk.NewTube(producer, "emails").Stats()
	if err != nil || stats["current-jobs-ready"] != fmt.Sprint(perTube) {
		t.Fatalf("stats-tube: %v %v", stats, err)
	}

	var mu sync.Mutex
	done := map[string]bool{}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			c, err := beanstalk.Dial("tcp", b.BeanstalkAddr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			ts := beanstalk.NewTubeSet(c, tubes...)
			for {
				id, body, err := ts.Reserve(500 * time.Millisecond)
				if err != nil {
					return // timed out: nothing left
				}
				switch {
				case strings.HasSuffix(string(body), "-7") && w == 0:
					err = c.Bury(id, 1) // kicked back below
				case strings.HasSuffix(string(body), "-5"):
					mu.Lock()
					seen := done[string(body)+"/released"]
					done[string(body)+"/released"] = true
					mu.Unlock()
					if !seen {
						err = c.Release(id, 0, 0)
						break
					}
					fallthrough
				default:
					err = c.Delete(id)
					mu.Lock()
					done[string(body)] = true
					mu.Unlock()
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, name := range tubes {
		tube := beanstalk.NewTube(producer, name)
		if _, err := tube.Kick(100); err != nil {
			t.Fatal(err)
		}
	}
	c, err := beanstalk.Dial("tcp", b.BeanstalkAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ts := beanstalk.NewTubeSet(c, tubes...)
	for {
		id, body, err := ts.Reserve(300 * time.Millisecond)
		if err != nil {
			break
		}
		if err := c.Delete(id); err != nil {
			t.Fatal(err)
		}
		done[string(body)] = true
	}
	for _, name := range tubes {
		for i := range perTube {
			if !done[fmt.Sprintf("%s-%d", name, i)] {
				t.Fatalf("%s-%d was never done", name, i)
			}
		}
	}
}

// A job put over beanstalkd is popped over HTTP, and the other way round.
func TestAcrossProtocols(t *testing.T) {
	b := broker(t)
	c, err := beanstalk.Dial("tcp", b.BeanstalkAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tube := beanstalk.NewTube(c, "mixed")
	id, err := tube.Put([]byte("from beanstalkd"), 7, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(b.URL + "/api/v1/pop?topic=mixed")
	if err != nil {
		t.Fatal(err)
	}
	var job map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&job); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if job["body"] != "from beanstalkd" || job["id"] != fmt.Sprint(id) || job["priority"] != 7.0 || job["TTR"] != 60.0 {
		t.Fatalf("popped over HTTP: %v", job)
	}

	resp, err = http.Post(b.URL+"/api/v1/jobs", "application/json",
		strings.NewReader(`{"topic":"mixed","body":"from HTTP","priority":3,"TTR":30}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ts := beanstalk.NewTubeSet(c, "mixed")
	gotID, body, err := ts.Reserve(time.Second)
	if err != nil || string(body) != "from HTTP" {
		t.Fatalf("reserved over beanstalkd: %q %v", body, err)
	}
	if err := c.Delete(gotID); err != nil {
		t.Fatal(err)
	}
}

// pheanstalk (PHP) runs a producer and consumer flow against gmq.
func TestPheanstalkClient(t *testing.T) {
	php, err := exec.LookPath("php")
	_, libErr := os.Stat("/usr/share/php/Pheanstalk/autoload.php")
	if err != nil || libErr != nil {
		if os.Getenv("GMQ_REQUIRE_PHP") == "1" {
			t.Fatal("php or pheanstalk missing (apt-get install -y php-cli php-mbstring php-pda-pheanstalk)")
		}
		t.Skip("php or pheanstalk missing (apt-get install -y php-cli php-mbstring php-pda-pheanstalk)")
	}
	b := broker(t)
	host, port, err := net.SplitHostPort(b.BeanstalkAddr)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(php, "testdata/pheanstalk_flow.php", host, port).CombinedOutput()
	if err != nil {
		t.Fatalf("pheanstalk flow: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
