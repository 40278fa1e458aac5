package master

import (
	"context"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta/memstore"
)

// A master needs exactly one way to its store: etcd's endpoints to dial,
// or a store handed in.
func TestStartNeedsEtcdOrAStoreButNotBoth(t *testing.T) {
	twin := memstore.New(memstore.Options{})
	defer twin.Close()
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{name: "neither", opts: Options{}, want: "Options.Etcd is required"},
		{name: "both", opts: Options{Etcd: []string{"127.0.0.1:2379"}, Store: twin}, want: "both set"},
	} {
		m, err := Start(context.Background(), tc.opts)
		if err == nil {
			m.Close()
			t.Fatalf("%s: Start succeeded, want an error", tc.name)
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "master: ") {
			t.Errorf("%s: Start = %v, want a master: error containing %q", tc.name, err, tc.want)
		}
	}
}

// A store handed in is the caller's: the master's Close ends what the
// master held on it (its election key) and leaves the store open.
func TestCloseLeavesAGivenStoreOpen(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	c.waitLeader(m)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err := c.cli.Get(context.Background(), c.layout.ElectionPrefix(), clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("the store after the master's Close: %v, want it open", err)
	}
	if len(resp.Kvs) != 0 {
		t.Fatalf("election keys after Close: %d, want none (the master resigned)", len(resp.Kvs))
	}
}
