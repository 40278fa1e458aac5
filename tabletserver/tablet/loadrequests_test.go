package tablet

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/vfs/s3fs"
	"github.com/tabuladb/tabula/wal"
)

// serverOf names the server that loads opts's tablet at epoch, for its
// shared log (a log per tablet and epoch).
func serverOf(opts Options, epoch int64) string {
	return fmt.Sprintf("server-%s-%d", strings.ReplaceAll(opts.Name, "/", "-"), epoch)
}

// openCounting opens opts at epoch on fsys (an object store) with a fresh
// shared log and returns the store requests the open made.
func openCounting(t *testing.T, fsys *s3fs.FS, opts Options, epoch int64) (*Tablet, s3fs.Requests) {
	t.Helper()
	opts.Epoch, opts.Log = epoch, sharedLogAt(t, fsys, "/model", serverOf(opts, epoch), wal.SyncAlways)
	before := fsys.Requests()
	tb := openTablet(t, opts)
	return tb, fsys.Requests().Sub(before)
}

// TestLoadOnAnObjectStoreCostsTheSameWithAnySSTables: a tablet holding
// SSTables moving to a new owner (a new epoch, what a failover or a move
// does) on an object store reads its folder with one LIST, its newest
// manifest with one GET and the version after it with one more (asked for
// by name: a listing that lags must not make an older version win), and
// seals with one PUT: four requests, with 1 SSTable or 8, no COPY and no
// DELETE (docs/CONTRACTS.md §3 "Manifest"). The SSTables are placed by
// the keys the manifest records and opened on their first read: a point
// read then opens the one file that may hold its row (one GET of its
// tail, opened by the size the manifest records, without a LIST of its
// parts) and reads its block. The older epochs' manifests the LIST showed
// stay until the new owner's first batch of removals (its version 17),
// which removes them in one request and then its own older versions in
// another. Before, the load opened every SSTable: one GET each (five
// requests with one SSTable, twelve with 8; six when the seal deleted, 9
// before the SSTable was opened by its size, 25 before that). A new
// tablet costs its folder's LIST, its three directory markers and the
// seal's PUT (it was 26).
func TestLoadOnAnObjectStoreCostsTheSameWithAnySSTables(t *testing.T) {
	fsys := startObjectStore(t).(*s3fs.FS)
	for _, n := range []int{1, 8} { // 1 first: see loadCosts
		t.Run(fmt.Sprintf("%d SSTables", n), func(t *testing.T) {
			loadCosts(t, fsys, n)
		})
	}
}

// loadCosts is TestLoadOnAnObjectStoreCostsTheSameWithAnySSTables for a
// tablet of n SSTables (n flushes of 1,000 rows, one after the other).
func loadCosts(t *testing.T, fsys *s3fs.FS, n int) {
	opts := testOptions(fmt.Sprintf("/model/tables/users/t%d", n))
	opts.FS, opts.Name = fsys, fmt.Sprintf("users/t%d", n)
	tb, got := openCounting(t, fsys, opts, 1)
	// The folders' markers are written once per process: only the first
	// tablet created writes those of tables/ and users/.
	if want := (s3fs.Requests{List: 1, Put: 4}); n == 1 && got != want {
		t.Errorf("creating a tablet made %+v requests, want %+v", got, want)
	}
	for f := range n {
		for r := range 1000 {
			apply(t, tb, fmt.Sprintf("row%05d", f*1000+r), set("a", "q", 1, "value"))
		}
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	opts.Create = false
	for epoch := int64(2); epoch <= 3; epoch++ {
		tb, got := openCounting(t, fsys, opts, epoch)
		if want := (s3fs.Requests{List: 1, Get: 2, Put: 1}); got != want {
			t.Errorf("loading the tablet (%d SSTables) at epoch %d made %+v requests, want %+v", n, epoch, got, want)
		}
		if got := tb.Stats().Families["a"].SSTables; got != n {
			t.Fatalf("the tablet opened at epoch %d with %d SSTables, want %d", epoch, got, n)
		}
		before := fsys.Requests()
		if got := readRow(t, tb, "row00500", nil); got == "" {
			t.Fatalf("the tablet opened at epoch %d does not read row00500 back", epoch)
		}
		first := fsys.Requests().Sub(before)
		if want := (s3fs.Requests{Get: 2}); first != want {
			t.Errorf("the first point read after the load (%d SSTables) made %+v requests, want %+v: the tail of the one file that may hold the row, and its block", n, first, want)
		}
		if err := tb.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if epochs, err := manifest.Epochs(fsys, opts.Dir); err != nil || len(epochs) != 3 {
		t.Fatalf("after the loads the folder lists the manifests of epochs %v (%v), want 1, 2 and 3", epochs, err)
	}
	// The owner at epoch 4 saves up to its first batch: one request
	// removes the older epochs' manifests, one its own older versions
	// (none when its seal is the version before).
	opts.Epoch, opts.Log = 4, sharedLogAt(t, fsys, "/model", serverOf(opts, 4), wal.SyncAlways)
	tb = openTablet(t, opts)
	defer tb.Close()
	var deletes int64
	for i := 0; ; i++ {
		before := fsys.Requests()
		apply(t, tb, fmt.Sprintf("more%03d", i), set("a", "q", 1, "value"))
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
		deletes += fsys.Requests().Sub(before).Delete
		epochs, err := manifest.Epochs(fsys, opts.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(epochs) == 1 {
			break
		}
		if i > 2*removeEvery {
			t.Fatalf("after %d saves at epoch 4 the folder still lists the manifests of epochs %v", i+1, epochs)
		}
	}
	if deletes < 1 || deletes > 2 {
		t.Errorf("removing the older epochs' manifests and epoch 4's older versions made %d DELETEs, want 1 or 2", deletes)
	}
}

// TestManifestSavesOnAnObjectStoreRemoveOldVersionsInBatches: a save on an
// object store is one PUT, and the versions before the one before the
// newest go in one multi-object delete every 16 saves, not one DELETE per
// save; the newest two versions always stay.
func TestManifestSavesOnAnObjectStoreRemoveOldVersionsInBatches(t *testing.T) {
	fsys := startObjectStore(t).(*s3fs.FS)
	opts := testOptions("/model/tables/users/t1")
	opts.FS, opts.Name = fsys, "users/t1"
	tb, _ := openCounting(t, fsys, opts, 1) // the seal saved version 1
	before := fsys.Requests()
	const saves = 40
	for i := range saves {
		apply(t, tb, fmt.Sprintf("r%03d", i), set("a", "q", 1, "v"))
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	got := fsys.Requests().Sub(before)
	// Each flush: a PUT of its SSTable (and a marker of its family's
	// folder, written again), a PUT of the manifest, the LIST that checks
	// this owner's manifest is the newest before the log is trimmed.
	// The batches: at versions 17 and 33.
	if got.Copy != 0 || got.Delete != 2 {
		t.Errorf("%d saves made %+v requests: want no COPY and 2 DELETEs (one batch at versions 17 and 33)", saves, got)
	}
	ids, err := manifest.List(fsys, opts.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, id := range ids {
		names = append(names, id.Name())
	}
	// Versions 1..31 went in the two batches; 32..41 stay.
	if len(ids) != 10 || ids[0].Version != 32 || ids[len(ids)-1].Version != saves+1 {
		t.Fatalf("after %d saves the folder lists %s, want versions 32 to %d", saves, strings.Join(names, " "), saves+1)
	}
}
