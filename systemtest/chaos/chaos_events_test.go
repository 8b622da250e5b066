package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gmq/gmq/systemtest/harness"
)

// eventLog is a consumer of a topic's events across broker kills: it
// reads GET /api/v1/events, and when the stream ends (the broker died)
// connects again with the last id it had, as a client's iterator does. It
// keeps each job's events in order, and says whether the broker ever told
// it that events were lost.
type eventLog struct {
	mu    sync.Mutex
	byJob map[string][]string // public id -> event types, in order
	lost  bool
	stop  context.CancelFunc
	done  chan struct{}
}

func watchEvents(b *harness.BrokerProc, topic string) *eventLog {
	ctx, stop := context.WithCancel(context.Background())
	l := &eventLog{byJob: map[string][]string{}, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		last := ""
		for ctx.Err() == nil {
			last = l.read(ctx, b.URL("/api/v1/events?topics="+topic), last)
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond): // the broker restarting
			}
		}
	}()
	return l
}

// read reads one connection's events from after last until it ends, and
// returns the last id it had.
func (l *eventLog) read(ctx context.Context, url, last string) string {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return last
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return last
	}
	sc := bufio.NewScanner(resp.Body)
	var id, name, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "":
			if id != "" {
				last = id // a heartbeat's id too: the positions go on
			}
			if name == "lost" {
				l.mu.Lock()
				l.lost = true
				l.mu.Unlock()
			}
			if name == "" && data != "" {
				var ev struct{ Type, ID string }
				if json.Unmarshal([]byte(data), &ev) == nil {
					l.mu.Lock()
					l.byJob[ev.ID] = append(l.byJob[ev.ID], ev.Type)
					l.mu.Unlock()
				}
			}
			id, name, data = "", "", ""
		}
	}
	return last
}

// events is job id's events so far.
func (l *eventLog) events(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.byJob[id]...)
}

func (l *eventLog) close() {
	l.stop()
	<-l.done
}
