package pool

import (
	"context"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/lua"
)

// The decoders are lua.ReplyShapes as they stand: a shape changed without
// `go generate ./lua` fails here, and its callers fail to compile.
func TestReplyDecodersAreGenerated(t *testing.T) {
	want, err := lua.ReplyDecoders()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("replies_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatal("pool/replies_gen.go is stale: run go generate ./lua")
	}
}

// No Go code of the store reads a reply by position: every index or slice
// of a Redis reply's values ([]rueidis.RedisMessage) is in the generated
// decoders, which read them by the names of lua.ReplyShapes, and the
// readers they share (replyvalues.go). (A list of
// replies, one an operation or a command, is indexed by the operation:
// [][]rueidis.RedisMessage, or rueidis's results of DoMulti.)
func TestNoReplyReadByPosition(t *testing.T) {
	fset := token.NewFileSet()
	var files []*ast.File
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("github.com/gmq/gmq/pool", fset, files, info); err != nil {
		t.Fatalf("type-check pool: %v", err)
	}
	messages := func(e ast.Expr) bool {
		tv, ok := info.Types[e]
		return ok && strings.HasSuffix(tv.Type.String(), "[]github.com/redis/rueidis.RedisMessage") &&
			!strings.HasSuffix(tv.Type.String(), "[][]github.com/redis/rueidis.RedisMessage")
	}
	reads := 0
	for _, f := range files {
		name := fset.Position(f.Pos()).Filename
		if name == "replies_gen.go" || name == "replyvalues.go" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var x ast.Expr
			switch n := n.(type) {
			case *ast.IndexExpr:
				x = n.X
			case *ast.SliceExpr:
				x = n.X
			}
			if x != nil && messages(x) {
				reads++
				t.Errorf("%s: a reply read by position: decode it by a shape (lua.ReplyShapes)", fset.Position(n.Pos()))
			}
			return true
		})
	}
	t.Logf("%d positional reply reads outside replies_gen.go", reads)
}

// BenchmarkDecodeReplies decodes what a batched call answers, as every
// call's reply is read: eight operations' replies, then the call's totals.
func BenchmarkDecodeReplies(b *testing.B) {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redis.Addr}, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	list, err := client.Do(context.Background(), client.B().Eval().Script(`local r = {}
for i = 1, 8 do r[i] = {'OK', 'cid', '', 0} end
r[9] = {'TOTALS', 'k', 'total_jobs', 1, 'k2', 'total_jobs', 1}
return r`).Numkeys(0).Build()).ToArray()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		replies := decodeRepliesReply(list).Replies
		for _, r := range replies[:8] {
			_ = decodeAckReply(r)
		}
		_ = decodeBatchExtraReply(replies[8]).Adds
	}
}
