package manifest

import (
	"errors"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// wholeFS is an object store's whole files on the local disk: a file
// written whole (os.WriteFile is enough for one goroutine), read whole,
// removed in one call. It counts its calls and fails writes as a test
// says: a PUT that lands (or not) and whose answer is lost. Rename and
// Open panic: a manifest on an FS with whole files never renames, and
// reads each version with ReadWhole.
type wholeFS struct {
	vfs.FS
	// fail, when set, decides a WriteWhole of name: whether it lands,
	// and the error it answers.
	fail                  func(name string) (lands bool, err error)
	puts, reads, removals atomic.Int64    // Load reads two versions at once
	hidden                map[string]bool // names List does not show yet
	ghosts                []string        // names List shows that are gone
}

func newWholeFS() *wholeFS { return &wholeFS{FS: vfs.Default, hidden: map[string]bool{}} }

func (w *wholeFS) WriteWhole(name string, b []byte) error {
	w.puts.Add(1)
	lands, err := true, error(nil)
	if w.fail != nil {
		lands, err = w.fail(name)
	}
	if lands {
		if werr := os.WriteFile(name, b, 0o644); werr != nil {
			return werr
		}
	}
	return err
}

func (w *wholeFS) ReadWhole(name string) ([]byte, error) {
	w.reads.Add(1)
	return os.ReadFile(name)
}

func (w *wholeFS) RemoveWhole(names []string) error {
	w.removals.Add(1)
	for _, n := range names {
		if err := os.Remove(n); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func (w *wholeFS) Rename(string, string) error       { panic("a rename on an FS with whole files") }
func (w *wholeFS) Open(string) (vfs.Readable, error) { panic("an Open on an FS with whole files") }

func (w *wholeFS) List(dir string) ([]vfs.Entry, error) {
	es, err := w.FS.List(dir)
	out := es[:0]
	for _, e := range es {
		if !w.hidden[e.Name] {
			out = append(out, e)
		}
	}
	for _, n := range w.ghosts {
		out = append(out, vfs.Entry{Name: n})
	}
	return out, err
}

// threeVersions saves versions 1 to 3 of epoch 2 on a new wholeFS and
// returns the folder, the FS and the state of version 3.
func threeVersions(t *testing.T) (string, *wholeFS, State) {
	t.Helper()
	dir := t.TempDir()
	w := newWholeFS()
	s := sampleState()
	for v := uint64(1); v <= 3; v++ {
		s.LastSeq = 100 * v
		if err := SaveVersion(w, dir, ID{Epoch: 2, Version: v}, s); err != nil {
			t.Fatal(err)
		}
	}
	return dir, w, s
}

// TestSaveOnWholeFilesIsOnePut: on an object store a save is one PUT of
// the version under its own name (no temporary file, no rename), a load
// one LIST and two reads (the newest listed version and the one after
// it), and the older versions go in one removal.
func TestSaveOnWholeFilesIsOnePut(t *testing.T) {
	dir, w, s := threeVersions(t)
	if n := w.puts.Load(); n != 3 {
		t.Fatalf("3 saves made %d PUTs, want 3", n)
	}
	if es, _ := os.ReadDir(dir); len(es) != 3 {
		t.Fatalf("the folder holds %d files, want the 3 versions", len(es))
	}
	f, err := ReadFolder(w, dir)
	if err != nil {
		t.Fatal(err)
	}
	got, id, found, err := f.Load(w)
	if err != nil || !found || id != (ID{2, 3}) || !reflect.DeepEqual(got, s) {
		t.Fatalf("Load = %+v %v %v %v, want version 3", got, id, found, err)
	}
	if n := w.reads.Load(); n != 2 {
		t.Fatalf("the load made %d reads, want 2 (the newest and the probe after it)", n)
	}
	if err := RemoveFiles(w, f.Before(ID{Epoch: 2, Version: 3})); err != nil || w.removals.Load() != 1 {
		t.Fatalf("RemoveFiles: %v, %d removals, want one", err, w.removals.Load())
	}
	if ids, _ := List(w, dir); !reflect.DeepEqual(ids, []ID{{2, 3}}) {
		t.Fatalf("after the removal the folder lists %v", ids)
	}
}

// TestLoadOnWholeFilesAsksPastTheListing: a version the listing does not
// show yet is read by name, and the version after it too, until one is
// absent.
func TestLoadOnWholeFilesAsksPastTheListing(t *testing.T) {
	dir, w, s := threeVersions(t)
	w.hidden[ID{2, 2}.Name()], w.hidden[ID{2, 3}.Name()] = true, true
	got, id, found, err := LoadLatest(w, dir)
	if err != nil || !found || id != (ID{2, 3}) || !reflect.DeepEqual(got, s) {
		t.Fatalf("LoadLatest behind the listing = %+v %v %v %v, want version 3", got, id, found, err)
	}
	// A listed version that is gone fails the load, never a fall back
	// to an older one.
	w.hidden = map[string]bool{}
	w.ghosts = []string{ID{2, 4}.Name()}
	if _, _, err := Load(w, dir); err == nil || !strings.Contains(err.Error(), "listed but gone") {
		t.Fatalf("Load of a listed version that is gone = %v, want an error", err)
	}
}

// TestSaveOnWholeFilesOfUnknownOutcome: a PUT whose answer was lost is
// read back: landed, the save happened; absent, the save is ErrMaybeSaved
// and a reopen at the same epoch skips its version and the file numbers
// it names (Folder.Pending), from the temporary file written after the
// failure or, when even that write failed, from this process's record.
func TestSaveOnWholeFilesOfUnknownOutcome(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lands    bool
		tmpFails bool
		notApp   bool
	}{
		{name: "answer lost, landed", lands: true},
		{name: "not landed", lands: false},
		{name: "not landed, record fails too", lands: false, tmpFails: true},
		{name: "not applied", notApp: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w := newWholeFS()
			old := sampleState()
			if err := SaveVersion(w, dir, ID{Epoch: 3, Version: 1}, old); err != nil {
				t.Fatal(err)
			}
			next := old
			next.LastSeq, next.NextFileNum = 200, 40
			id := ID{Epoch: 3, Version: 2}
			w.fail = func(name string) (bool, error) {
				switch {
				case tc.notApp:
					return false, vfs.NotApplied(errors.New("refused"))
				case strings.HasSuffix(name, ".tmp"):
					if tc.tmpFails {
						return false, errors.New("the store is down")
					}
					return true, nil
				}
				return tc.lands, errors.New("timeout")
			}
			err := SaveVersion(w, dir, id, next)
			w.fail = nil
			maybe := !tc.lands && !tc.notApp
			if errors.Is(err, ErrMaybeSaved) != maybe || (err == nil) != tc.lands {
				t.Fatalf("SaveVersion = %v, want ErrMaybeSaved %v", err, maybe)
			}
			f, err := ReadFolder(w, dir)
			if err != nil {
				t.Fatal(err)
			}
			got, gotID, _, err := f.Load(w)
			want, wantID := old, ID{3, 1}
			if tc.lands {
				want, wantID = next, id
			}
			if err != nil || gotID != wantID || !reflect.DeepEqual(got, want) {
				t.Fatalf("Load after the save = %v %+v, %v; want %v", gotID, got, err, wantID)
			}
			p := f.Pending(w, 3, gotID.Version)
			wantP := Pending{}
			if maybe {
				wantP = Pending{Version: 2, NextFileNum: 40}
			}
			if p != wantP {
				t.Fatalf("Pending = %+v, want %+v", p, wantP)
			}
			// Another process (an FS of its own) has only the store's
			// record: the temporary file, unless its write failed.
			if p := f.Pending(newWholeFS(), 3, gotID.Version); maybe && !tc.tmpFails && p != wantP {
				t.Fatalf("Pending in another process = %+v, want %+v", p, wantP)
			}
			// The next epoch's seal removes the temporary file with the
			// older versions.
			if err := RemoveFiles(w, f.Before(ID{Epoch: 4})); err != nil {
				t.Fatal(err)
			}
			if es, _ := os.ReadDir(dir); len(es) != 0 {
				t.Fatalf("after the removal the folder holds %v", es)
			}
		})
	}
}

// TestLoadForFindsANewerSealTheListingHides: an owner at epoch 5 sealed
// with version 4, after the newest it read (epoch 3's version 3), and the
// listing shows epoch 3's versions only. An opener at epoch 6 or later
// finds the seal by name and fails (ErrListingBehind, also
// fs.ErrNotExist), whether the listing shows epoch 3's newest or up to
// lateSaves versions epoch 3's owner saved after the seal's owner read
// (a paused owner's late saves), and whatever epochs lie between; an
// opener at the epoch after the newest listed has nothing to ask and
// opens it; so does any opener once the seal is not there.
func TestLoadForFindsANewerSealTheListingHides(t *testing.T) {
	for late := range lateSaves + 1 {
		dir, w := t.TempDir(), newWholeFS()
		s := sampleState()
		for v := uint64(1); v <= 3+uint64(late); v++ {
			if err := SaveVersion(w, dir, ID{Epoch: 3, Version: v}, s); err != nil {
				t.Fatal(err)
			}
		}
		seal := ID{Epoch: 5, Version: 4}
		if err := SaveVersion(w, dir, seal, s); err != nil {
			t.Fatal(err)
		}
		w.hidden[seal.Name()] = true
		f, err := ReadFolder(w, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, epoch := range []int64{6, 7, 9} {
			if _, _, _, err := f.LoadFor(w, epoch); !errors.Is(err, ErrListingBehind) || !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%d late saves: LoadFor at epoch %d behind a listing that hides epoch 5's seal = %v, want ErrListingBehind", late, epoch, err)
			}
		}
		newest := ID{Epoch: 3, Version: 3 + uint64(late)}
		if _, id, _, err := f.LoadFor(w, 4); err != nil || id != newest {
			t.Errorf("%d late saves: LoadFor at epoch 4 = %v %v, want %v", late, id, err, newest)
		}
		if err := w.Remove(dir + "/" + seal.Name()); err != nil {
			t.Fatal(err)
		}
		if _, id, _, err := f.LoadFor(w, 9); err != nil || id != newest {
			t.Errorf("%d late saves: LoadFor at epoch 9 without the seal = %v %v, want %v", late, id, err, newest)
		}
	}
}
