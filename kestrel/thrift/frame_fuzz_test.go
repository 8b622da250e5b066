package thrift

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/kestrel/thrift/wire"
)

// fuzzMaxRequest is the frame limit the fuzz target reads within.
const fuzzMaxRequest = 1 << 10

// fuzzMaxAlloc bounds what reading and decoding one frame of at most
// fuzzMaxRequest bytes may allocate: the frame, its items and their slice,
// the answer, with room for the runtime's own; a claimed count that were
// believed would make gigabytes.
const fuzzMaxAlloc = 256 << 10

// The frame reader and the generated processor (through boundedProtocol)
// on any bytes: they never panic, never keep a frame over the limit, and
// never allocate beyond a bound set by the limit, whatever counts and
// lengths the bytes claim.
func FuzzReadFrame(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	cfg := &thrift.TConfiguration{MaxMessageSize: fuzzMaxRequest, MaxFrameSize: fuzzMaxRequest}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		h := &fuzzHandler{t: t}
		processor := wire.NewKestrelProcessor(h)
		out := thrift.NewTBinaryProtocolConf(thrift.NewTFramedTransportConf(thrift.NewTMemoryBuffer(), cfg), cfg)
		for range 20 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			fr, err := readFrame(r, fuzzMaxRequest, &budget.Hold{})
			if err != nil {
				return
			}
			if len(fr.msg) > fuzzMaxRequest {
				t.Fatalf("kept a %d-byte frame over the %d-byte limit", len(fr.msg), fuzzMaxRequest)
			}
			if fr.refused != nil {
				if fr.last {
					return
				}
				continue
			}
			ok, _ := processor.Process(context.Background(), newBoundedProtocol(fr.msg, cfg), out)
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > fuzzMaxAlloc {
				t.Fatalf("a %d-byte frame made %d bytes", len(fr.msg), grew)
			}
			if !ok {
				return
			}
		}
	})
}

// fuzzSeeds are a frame of each call, well made, and a few that lie.
func fuzzSeeds(f *testing.F) [][]byte {
	calls := []struct {
		name string
		args thrift.TStruct
	}{
		{"put", &wire.KestrelPutArgs{QueueName: "q", Items: [][]byte{[]byte("one"), []byte("two")}, ExpirationMsec: 5}},
		{"get", &wire.KestrelGetArgs{QueueName: "q", MaxItems: 10, TimeoutMsec: 100, AutoAbortMsec: 1000}},
		{"confirm", &wire.KestrelConfirmArgs{QueueName: "q", Ids: []int64{1025, 2049}}},
		{"abort", &wire.KestrelAbortArgs{QueueName: "q", Ids: []int64{1025}}},
		{"peek", &wire.KestrelPeekArgs{QueueName: "q"}},
		{"flush_queue", &wire.KestrelFlushQueueArgs{QueueName: "q"}},
		{"flush_all_queues", &wire.KestrelFlushAllQueuesArgs{}},
		{"delete_queue", &wire.KestrelDeleteQueueArgs{QueueName: "q"}},
		{"current_status", &wire.KestrelCurrentStatusArgs{}},
		{"set_status", &wire.KestrelSetStatusArgs{Status: wire.Status_READ_ONLY, Broker: "this"}},
		{"get_version", &wire.KestrelGetVersionArgs{}},
		{"no_such_call", &wire.KestrelGetVersionArgs{}},
	}
	var seeds [][]byte
	for _, c := range calls {
		seeds = append(seeds, framed(f, c.name, c.args))
	}
	put := framed(f, "put", &wire.KestrelPutArgs{QueueName: "q", Items: [][]byte{[]byte("x")}})
	lying := bytes.Clone(put)
	i := bytes.Index(lying, []byte{0, 0, 0, 1, 0, 0, 0, 1, 'x'}) // the list's count of one, then the item's length
	binary.BigEndian.PutUint32(lying[i:], 1<<30)
	seeds = append(seeds, lying,
		binary.BigEndian.AppendUint32(nil, 1<<31),        // a frame far over the limit
		append(bytes.Clone(put), put[:len(put)/2]...),    // a frame cut short after a whole one
		append(binary.BigEndian.AppendUint32(nil, 0), 1), // an empty frame
		append(bytes.Clone(put), seeds[len(seeds)-1]...)) // pipelined
	return seeds
}

// framed is the frame of a call of name with args.
func framed(f *testing.F, name string, args thrift.TStruct) []byte {
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTBinaryProtocolConf(buf, nil)
	ctx := context.Background()
	if err := p.WriteMessageBegin(ctx, name, thrift.CALL, 1); err != nil {
		f.Fatal(err)
	}
	if err := args.Write(ctx, p); err != nil {
		f.Fatal(err)
	}
	if err := p.WriteMessageEnd(ctx); err != nil {
		f.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(buf.Len())), buf.Bytes()...)
}

// fuzzHandler answers every call with nothing, checking that what was
// decoded fits in a frame.
type fuzzHandler struct{ t *testing.T }

func (h *fuzzHandler) Put(_ context.Context, _ string, items [][]byte, _ int32) (int32, error) {
	total := 0
	for _, it := range items {
		total += len(it)
	}
	if total > fuzzMaxRequest || len(items) > fuzzMaxRequest/4 {
		h.t.Fatalf("decoded %d items of %d bytes from one frame", len(items), total)
	}
	return 0, nil
}

func (h *fuzzHandler) Get(context.Context, string, int32, int32, int32) ([]*wire.Item, error) {
	return []*wire.Item{}, nil
}

func (h *fuzzHandler) Confirm(_ context.Context, _ string, ids []int64) (int32, error) {
	if len(ids) > fuzzMaxRequest/8 {
		h.t.Fatalf("decoded %d ids from one frame", len(ids))
	}
	return 0, nil
}

func (h *fuzzHandler) Abort(ctx context.Context, queue string, ids []int64) (int32, error) {
	return h.Confirm(ctx, queue, ids)
}

func (h *fuzzHandler) Peek(context.Context, string) (*wire.QueueInfo, error) {
	return &wire.QueueInfo{}, nil
}

func (h *fuzzHandler) FlushQueue(context.Context, string) error  { return nil }
func (h *fuzzHandler) FlushAllQueues(context.Context) error      { return nil }
func (h *fuzzHandler) DeleteQueue(context.Context, string) error { return nil }

func (h *fuzzHandler) CurrentStatus(context.Context) (wire.Status, error) {
	return wire.Status_UP, nil
}

func (h *fuzzHandler) SetStatus(context.Context, wire.Status, string) error { return nil }
func (h *fuzzHandler) GetVersion(context.Context) (string, error)           { return "fuzz", nil }
