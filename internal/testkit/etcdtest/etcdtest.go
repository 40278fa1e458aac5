// Package etcdtest starts an embedded etcd for one test, the
// coordination store the tests of meta, the master and auth run on:
//
//	cli := etcdtest.Client(t) // a fresh etcd and a client of it
//	srv := etcdtest.Start(t)  // only the server, for a client of one's own
//
// The server keeps its data in t.TempDir with fsync off (a test needs no
// durability across a power cut); t.Cleanup closes the server and the
// client. Part of internal/testkit: tests only.
package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/internal/embedetcd"
)

// dialTimeout bounds the client's first connection to the server.
const dialTimeout = 5 * time.Second

// Start starts an etcd server for the test and returns it; t.Cleanup
// closes it.
func Start(t testing.TB) *embedetcd.Server {
	t.Helper()
	srv, err := embedetcd.Start(context.Background(), embedetcd.Config{Dir: t.TempDir(), NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// Client starts an etcd server for the test (see Start) and returns a
// plain client of it; t.Cleanup closes both, the client first.
func Client(t testing.TB) *clientv3.Client {
	t.Helper()
	srv := Start(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: dialTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
