package meta_test

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/internal/testkit/etcdtest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/meta/memstore"
	"github.com/tabuladb/tabula/meta/metatest"
)

// The conformance suite of meta.Store (meta/metatest) on etcd and on the
// twin. It runs here, in meta's test binary, which links etcd anyway.

// TestConformanceTwin runs the suite on the in-memory twin, a fresh store
// per case, its leases on a manual clock.
func TestConformanceTwin(t *testing.T) {
	t.Parallel() // its keepalive case waits for clientv3's real-time loop
	metatest.Run(t, func(t *testing.T) metatest.Harness {
		clock := memstore.NewManualClock()
		s := memstore.New(memstore.Options{Clock: clock})
		t.Cleanup(func() { s.Close() })
		return metatest.Harness{Store: s, Advance: clock.Advance}
	})
}

// TestConformanceEtcd runs it on one embedded etcd shared by the cases.
func TestConformanceEtcd(t *testing.T) {
	t.Parallel()
	cli := startEtcd(t)
	metatest.Run(t, func(*testing.T) metatest.Harness { return metatest.Harness{Store: cli} })
}

// startEtcd starts an embedded etcd and a client; both close when the
// test ends.
func startEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	srv := etcdtest.Start(t)
	cli, err := meta.NewClient(nil, srv.Endpoints(), nil) // as the master and the servers open it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
