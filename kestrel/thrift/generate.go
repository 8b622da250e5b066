package thrift

import "github.com/apache/thrift/lib/go/thrift"

// The wire package (wire/: the structs, the client and the processor) is
// generated from kestrel.thrift by Apache Thrift's compiler, the version
// of go.mod's github.com/apache/thrift (Debian's thrift-compiler 0.17.0),
// then gofmt'd; it is committed, so that a build needs no compiler, and
// TestWireIsGenerated fails when it is stale. To make it again:
//
//	apt-get install -y thrift-compiler
//	go generate ./kestrel/thrift
//
//go:generate sh -c "thrift --gen go:package_prefix=github.com/gmq/gmq/kestrel/thrift/,skip_remote -out . kestrel.thrift && gofmt -w wire"

func init() {
	// The generated processor starts a goroutine for each call that polls
	// the input transport every ServerConnectivityCheckInterval (5 ms) to
	// cancel the call of a client that hung up: 200 wake-ups a second for
	// each get that waits. Here the input is a frame in memory, always
	// open, and the connection's reader (tcpserver.Pipeline) sees a
	// hang-up and cancels the call's context itself, so the poll is off.
	// gmq has no other Thrift server whose calls it would slow.
	thrift.ServerConnectivityCheckInterval = 0
}
