package broker_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/job"
)

// A web page's no-cors fetch to a TCP port: the browser sends a request
// line and headers, then the body. Each TCP front end closes the connection
// at the request line, so the commands in the body never run (issue 20: a
// page stored a job and deleted another through the beanstalkd port).
func TestHTTPToTCPPortsClosed(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	ctx := context.Background()
	number, err := b.Dispatcher.Push(ctx, job.Spec{Topic: "default", Body: "keep me", TTR: time.Minute, Priority: job.DefaultPriority})
	if err != nil {
		t.Fatal(err)
	}
	victim := strconv.FormatUint(number.ID, 10)
	bodies := map[string]string{
		"beanstalk": "put 0 0 60 4\r\nevil\r\ndelete " + victim + "\r\n",
		"kestrel":   "set evil 0 0 4\r\nevil\r\nflush_all\r\n",
		"rpc":       `{"method":"Service.Push","params":[{"topic":"evil","body":"evil"}],"id":1}` + "\n",
	}
	for name, addr := range map[string]string{"beanstalk": b.BeanstalkAddr, "kestrel": b.KestrelAddr, "rpc": b.RPCAddr} {
		for _, method := range []string{"POST", "GET", "PUT"} {
			client := &http.Client{Timeout: 5 * time.Second}
			req, err := http.NewRequest(method, "http://"+addr+"/", strings.NewReader(bodies[name]))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "text/plain") // what a no-cors fetch may send
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Errorf("%s port, %s: answered %s, want the connection closed", name, method, resp.Status)
			} else if strings.Contains(err.Error(), "Timeout") {
				t.Errorf("%s port, %s: left open: %v", name, method, err)
			}
		}
	}
	st, err := b.Dispatcher.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Jobs != 1 || st.Ready != 1 {
		t.Fatalf("the bodies' commands ran: %d jobs pushed, %d ready, want the one", st.Jobs, st.Ready)
	}
	if _, err := b.Dispatcher.Peek(ctx, victim); err != nil {
		t.Fatalf("the job is gone: %v", err)
	}
	// The ports still serve their own protocols.
	if got := brokertest.Lines(t, b.BeanstalkAddr, "use t\r\n", 1); got[0] != "USING t\r\n" {
		t.Errorf("beanstalkd after: %q", got)
	}
	if got := brokertest.Lines(t, b.KestrelAddr, "GET nothing\r\n", 1); got[0] != "END\r\n" {
		t.Errorf("kestrel's upper-case GET after: %q", got)
	}
}
