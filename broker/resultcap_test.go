package broker_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
)

// TestResultCapOnEveryAck: a topic's max_result holds on every ack that
// can carry a result (HTTP's ack, its ack with next, its batch ack,
// JSON-RPC's Service.Ack; beanstalkd's delete and kestrel's confirm carry
// none, and an endpoint's answer over it is dropped: webhook), whether the
// topic keeps its completed jobs or not: a result over it is refused as
// too big and the job stays reserved, so its consumer learns it, rather
// than being acked 200 and the result dropped.
func TestResultCapOnEveryAck(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c := capsCall{t: t, api: b.URL + "/api/v1"}
	const over, within = `"` + "0123456789abcdef" + `"`, `"ok"` // max_result 10: 18 bytes and 4
	for _, topic := range []string{"rc-none", "rc-kept"} {
		settings := `{"max_result": 10}`
		if topic == "rc-kept" {
			settings = `{"max_result": 10, "keep_completed": 3600}`
		}
		c.must(200, "PUT", "/topics/"+topic+"/config", settings)
		for _, ack := range []struct {
			name string
			ack  func(id string, attempt float64, result string) (refused bool, says string)
		}{
			{"HTTP ack", func(id string, attempt float64, result string) (bool, string) {
				code, msg, _ := c.do("POST", "/jobs/"+id+"/ack", fmt.Sprintf(`{"attempt":%v,"result":%s}`, attempt, result))
				return code == 413, fmt.Sprint(code, " ", msg)
			}},
			{"HTTP ack with next", func(id string, attempt float64, result string) (bool, string) {
				code, msg, _ := c.do("POST", "/jobs/"+id+"/ack", fmt.Sprintf(`{"attempt":%v,"result":%s,"next":{"topics":["rc-nothing"]}}`, attempt, result))
				return code == 413, fmt.Sprint(code, " ", msg)
			}},
			{"HTTP batch ack", func(id string, attempt float64, result string) (bool, string) {
				out := c.must(200, "POST", "/ack", fmt.Sprintf(`{"jobs":[{"id":%q,"attempt":%v,"result":%s}]}`, id, attempt, result))
				failed, _ := out["failed"].([]any)
				return len(failed) == 1 && failed[0].(map[string]any)["status"] == 413.0, fmt.Sprint(out)
			}},
			{"JSON-RPC Service.Ack", func(id string, attempt float64, result string) (bool, string) {
				line := brokertest.Lines(t, b.RPCAddr, fmt.Sprintf(`{"method":"Service.Ack","params":[{"id":%q,"attempt":%v,"result":%s}],"id":1}`+"\n", id, attempt, result), 1)[0]
				return strings.Contains(line, `"error":"too_big: `), line
			}},
		} {
			t.Run(topic+"/"+ack.name, func(t *testing.T) {
				c.t = t
				c.must(201, "POST", "/jobs", `{"topic":"`+topic+`","body":"x"}`)
				id, attempt := c.pop(topic)
				if refused, says := ack.ack(id, attempt, over); !refused || !strings.Contains(says, "max_result is 10") {
					t.Fatalf("an ack with a result of 18 bytes over max_result 10: %s, want refused as too big", says)
				}
				if j := c.must(200, "GET", "/jobs/"+id, ""); j["state"] != "reserved" {
					t.Fatalf("the job after its refused ack: %v, want still reserved", j)
				}
				if refused, says := ack.ack(id, attempt, within); refused || strings.Contains(says, "error") && !strings.Contains(says, `"error":null`) {
					t.Fatalf("an ack with a result within max_result: %s", says)
				}
			})
		}
	}
}
