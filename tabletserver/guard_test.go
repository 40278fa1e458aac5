package tabletserver

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// TestFlushIsRefusedOnceTheLeaseIsUnsafe opens a tablet with the engine
// options the server gives its tablets, stops the lease renewals and
// checks that a flush is then refused by the write guard with ErrFenced,
// leaving the MANIFEST byte-identical (the next owner may be writing it),
// and that nothing is lost: the flush goes through once renewals resume,
// and the data reads back after a reopen.
func TestFlushIsRefusedOnceTheLeaseIsUnsafe(t *testing.T) {
	e := newEnv(t)
	r := &renewals{}
	srv := e.startWithRenewals(r, func(o *Options) { o.PauseRenewals = r.isPaused; o.DisableBackgroundWork = true })
	fams, err := familiesFromSchema(e.schema)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.root, "guarded")
	opts := srv.engineOptions(dir, fams, nil, nil, 0)
	opts.Create = true
	tb, err := tablet.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	setCell := func(row, value string) {
		t.Helper()
		m := cell.Mutation{Kind: cell.SetCell, Family: "cf", Qualifier: []byte("q"), Timestamp: 1, Value: []byte(value)}
		if err := tb.Apply(e.ctx, []byte(row), []cell.Mutation{m}); err != nil {
			t.Fatal(err)
		}
	}
	setCell("alice", "a")
	if err := tb.Flush(e.ctx); err != nil {
		t.Fatalf("flush with a safe lease: %v", err)
	}
	setCell("bob", "b")
	before := newestManifest(t, dir)

	r.pause(t) // no renewal can make the lease safe again
	eventually(t, 10*time.Second, "the lease to become unsafe", func() bool { return !srv.leaseSafe() })
	err = tb.Flush(e.ctx)
	if !errors.Is(err, ErrFenced) || !errors.Is(err, tablet.ErrGuardRefused) {
		t.Fatalf("flush with an unsafe lease = %v, want ErrFenced through the write guard", err)
	}
	if after := newestManifest(t, dir); !bytes.Equal(after, before) {
		t.Fatalf("the manifest changed while the lease was unsafe")
	}

	r.resume()
	eventually(t, 10*time.Second, "registration again", srv.Serving)
	if err := tb.Flush(e.ctx); err != nil {
		t.Fatalf("flush after the lease is safe again: %v", err)
	}
	if after := newestManifest(t, dir); bytes.Equal(after, before) {
		t.Fatal("the allowed flush did not save the manifest")
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	re, replayed := reopen(t, e, dir)
	if replayed != 0 {
		t.Fatalf("reopen replayed %d bytes; the flush should have covered them", replayed)
	}
	for row, want := range map[string]string{"alice": "a", "bob": "b"} {
		cells, err := re.ReadRow(e.ctx, []byte(row), nil)
		if err != nil || len(cells) != 1 || string(cells[0].Value) != want {
			t.Fatalf("row %s reads %v, %v", row, cells, err)
		}
	}
}

// newestManifest returns the name and bytes of the newest manifest version
// in dir: every save writes a new version.
func newestManifest(t *testing.T, dir string) []byte {
	t.Helper()
	id, ok, err := manifest.Newest(nil, dir)
	if err != nil || !ok {
		t.Fatalf("no manifest in %s: %v", dir, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, id.Name()))
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(id.Name()+"\n"), b...)
}
