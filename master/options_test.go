package master

import (
	"context"
	"strings"
	"testing"

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
