package auth

import (
	"context"
	"log/slog"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/tabuladb/tabula/internal/testkit/etcdtest"
	"github.com/tabuladb/tabula/meta"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startEtcd starts an embedded etcd and returns a client, both closed by
// t.Cleanup.
func startEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	srv := etcdtest.Start(t)
	cli, err := meta.NewClient(nil, srv.Endpoints(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// eventually polls cond until it holds or 10s pass: the watch delivers
// changes in milliseconds; the bound only keeps a broken watch from
// hanging the test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func withPrefix() clientv3.OpOption { return clientv3.WithPrefix() }

// startCache runs a cache of l's records in s until ctx ends; the test's
// cleanup waits for it to stop (so cancel ctx before the test returns).
func startCache(t *testing.T, ctx context.Context, s meta.Store, l meta.Layout) *Cache {
	t.Helper()
	c := NewCache(s, l, slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	t.Cleanup(func() { <-done })
	return c
}
