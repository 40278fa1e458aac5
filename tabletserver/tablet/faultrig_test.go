package tablet

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// faultRig is a tablet on a local disk that fails what a test asks for
// (vfs.Faulty through Options.FS), with the rows it acknowledged, so a
// test can check that none is lost after reopening on a healthy disk.
type faultRig struct {
	t     *testing.T
	dir   string
	fs    *vfs.Faulty
	tb    *Tablet
	acked []string // rows whose write was acknowledged
	epoch int64    // the owner's epoch (0: unfenced)
	// whole runs the tablet on the Faulty's whole files (an object
	// store's paths: vfs.Faulty.WholeFiles).
	whole bool

	mu       sync.Mutex
	failures []error // what OnFailure was told
}

func newFaultRig(t *testing.T) *faultRig {
	r := &faultRig{t: t, dir: t.TempDir(), fs: vfs.NewFaulty(vfs.Default)}
	r.tb = openTablet(t, r.options(r.fs))
	return r
}

// options are the rig's tablet options on fsys: acknowledged means
// fsynced, and no background work runs behind the test's back.
func (r *faultRig) options(fsys vfs.FS) Options {
	o := testOptions(r.dir)
	o.FS = fsys
	if f, ok := fsys.(*vfs.Faulty); ok && r.whole {
		o.FS = f.WholeFiles()
	}
	o.Epoch = r.epoch
	o.SyncMode = wal.SyncAlways
	o.OnFailure = func(err error) {
		r.mu.Lock()
		r.failures = append(r.failures, err)
		r.mu.Unlock()
	}
	return o
}

// rowMutations writes one cell of each family, both derived from row.
func rowMutations(row string) []cell.Mutation {
	return []cell.Mutation{set("a", "q", 1, "va-"+row), set("b", "q", 1, "vb-"+row)}
}

// wantRow is what reading a row written by rowMutations renders.
func wantRow(row string) string { return fmt.Sprintf("a:q@1=va-%s b:q@1=vb-%s", row, row) }

// write writes rows first..last-1 (named r000, r001, ...), which must be
// acknowledged.
func (r *faultRig) write(first, last int) {
	r.t.Helper()
	for i := first; i < last; i++ {
		row := fmt.Sprintf("r%03d", i)
		apply(r.t, r.tb, row, rowMutations(row)...)
		r.acked = append(r.acked, row)
	}
}

// tryWrite writes row and returns the error; it is not recorded.
func (r *faultRig) tryWrite(row string) error {
	return r.tb.Apply(bg, []byte(row), rowMutations(row))
}

func (r *faultRig) flush() {
	r.t.Helper()
	if err := r.tb.Flush(bg); err != nil {
		r.t.Fatalf("Flush: %v", err)
	}
}

// checkAcked fails unless every acknowledged row reads back whole.
func (r *faultRig) checkAcked() {
	r.t.Helper()
	for _, row := range r.acked {
		if got := readRow(r.t, r.tb, row, nil); got != wantRow(row) {
			r.t.Fatalf("acknowledged row %s reads %q, want %q", row, got, wantRow(row))
		}
	}
}

// reopen closes the tablet (its error may report the failure) and opens
// it again on the healthy local disk; every acknowledged row must be there
// and every file the manifest lists must exist.
func (r *faultRig) reopen() {
	r.t.Helper()
	_ = r.tb.Close()
	r.tb = openTablet(r.t, r.options(vfs.Default))
	checkReferencedExist(r.t, r.dir)
	r.checkAcked()
}

// reported returns what OnFailure was told.
func (r *faultRig) reported() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.failures...)
}

// failOn returns an injector failing op with err on the files whose path
// match accepts.
func failOn(op vfs.Op, match func(path string) bool, err error) vfs.Injector {
	return func(o vfs.Op, name string) error {
		if o == op && match(name) {
			return err
		}
		return nil
	}
}

// hasSuffix matches paths ending in suffix (a slash-separated suffix).
func hasSuffix(suffix string) func(string) bool {
	return func(p string) bool { return strings.HasSuffix(filepath.ToSlash(p), suffix) }
}

// sst matches the SSTables of the families given, or of every family.
func sst(families ...string) func(string) bool {
	return func(p string) bool {
		p = filepath.ToSlash(p)
		if !strings.HasSuffix(p, ".sst") {
			return false
		}
		for _, f := range families {
			if strings.HasSuffix(filepath.Dir(p), "/"+f) {
				return true
			}
		}
		return len(families) == 0
	}
}

// is matches exactly path.
func is(path string) func(string) bool {
	return func(p string) bool { return p == path }
}

// matches matches the paths of pattern (filepath.Match syntax).
func matches(pattern string) func(string) bool {
	return func(p string) bool { ok, _ := filepath.Match(pattern, p); return ok }
}
