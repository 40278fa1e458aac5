package tablet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/vfs"
)

// A store call whose answer was lost may have happened (docs/CONTRACTS.md
// §7): these tests fail the manifest's rename after carrying it out, or
// carry it out late, and check that the next owner finds every
// acknowledged row whichever manifest version it reads.

// newEpochRig is a fault rig whose tablet is opened at epoch 1, so that
// every later owner (a reopen at a higher epoch) seals.
func newEpochRig(t *testing.T) *faultRig {
	r := &faultRig{t: t, dir: t.TempDir(), fs: vfs.NewFaulty(vfs.Default), epoch: 1}
	r.tb = openTablet(t, r.options(r.fs))
	return r
}

// nextOwner closes the tablet and opens it at the next epoch on the same
// (now healthy) FS, as the owner it is handed on to would; every
// acknowledged row must be there and every file the manifest lists.
func (r *faultRig) nextOwner() {
	r.t.Helper()
	_ = r.tb.Close()
	r.fs.Set(nil)
	r.epoch++
	tb, err := Open(r.options(r.fs))
	if err != nil {
		r.t.Fatalf("the owner at epoch %d cannot open the tablet: %v", r.epoch, err)
	}
	r.t.Cleanup(func() { _ = tb.Close() })
	r.tb = tb
	checkReferencedExist(r.t, r.dir)
	r.checkAcked()
}

// manifestOf matches the manifest versions of epoch (not their temporary
// files).
func (r *faultRig) manifestOf(epoch int64) func(string) bool {
	return matches(filepath.Join(r.dir, fmt.Sprintf("%s-%d-v*[0-9]", manifest.FileName, epoch)))
}

// lateSteps are the engine's manifest saves a test fails: each runs the
// step on a rig prepared by prepare, with the rig's injector set, and
// returns its error. The seal at open saves at the next epoch.
var lateSteps = []lateStep{
	{name: "flush",
		prepare: func(r *faultRig) { r.write(0, 5); r.flush(); r.write(5, 10) },
		run:     func(r *faultRig) error { return r.tb.Flush(bg) }},
	{name: "compaction",
		prepare: func(r *faultRig) { r.write(0, 5); r.flush(); r.write(5, 10); r.flush() },
		run:     func(r *faultRig) error { return r.tb.Compact(bg, true) }},
	{name: "drop range",
		prepare: func(r *faultRig) { r.write(0, 10); r.flush() },
		run: func(r *faultRig) error {
			err := r.tb.DropRange(bg, []byte("r003"), []byte("r007"))
			// Published or not, the rows may be gone: only the others
			// are checked from here on.
			r.forgetRows("r003", "r007")
			return err
		}},
	{name: "seal at open",
		prepare: func(r *faultRig) { r.write(0, 5); r.flush(); r.write(5, 10) },
		run: func(r *faultRig) error {
			_ = r.tb.Close() // the rows 5..9 are in the log only
			r.epoch++
			tb, err := Open(r.options(r.fs))
			if err == nil {
				r.t.Cleanup(func() { _ = tb.Close() })
				r.tb = tb
			}
			return err
		},
		epoch: func(r *faultRig) int64 { return r.epoch + 1 }},
}

type lateStep struct {
	name    string
	prepare func(r *faultRig)
	run     func(r *faultRig) error
	epoch   func(r *faultRig) int64 // the epoch whose manifest save fails
}

// rig returns a rig prepared for the step and the epoch whose manifest
// the step saves.
func (s lateStep) rig(t *testing.T) (*faultRig, int64) {
	r := newEpochRig(t)
	s.prepare(r)
	if s.epoch != nil {
		return r, s.epoch(r)
	}
	return r, r.epoch
}

// TestManifestRenameAnswerLost: the manifest's rename is carried out and
// its answer lost (on S3: the CopyObject landed, the DELETE of the source
// failed). The save reads the new version back and finds it, so the step
// succeeds; if it cannot read it back either, the step fails with
// ErrMaybeSaved and keeps every file the new version names. Either way the
// next owner opens the tablet and finds every acknowledged row (before the
// fix the step deleted the files the published manifest names: the tablet
// could never open again).
func TestManifestRenameAnswerLost(t *testing.T) {
	for _, step := range lateSteps {
		for _, readBack := range []bool{true, false} {
			name := step.name
			if !readBack {
				name += " unread"
			}
			t.Run(name, func(t *testing.T) {
				r, epoch := step.rig(t)
				isManifest := r.manifestOf(epoch)
				r.fs.Set(func(op vfs.Op, name string) error {
					switch {
					case op == vfs.OpRename && isManifest(name):
						return &vfs.AfterApply{Err: vfs.Failf("rename of %s: answer lost", name)}
					case !readBack && (op == vfs.OpOpen || op == vfs.OpStat) && isManifest(name):
						return vfs.Failf("reading %s back", name)
					}
					return nil
				})
				err := step.run(r)
				r.fs.Set(nil)
				// Errorf, not Fatalf: the next owner's open says what a
				// wrong answer cost.
				if readBack && err != nil {
					t.Errorf("%s whose manifest was saved = %v, want success", step.name, err)
				}
				if !readBack && !errors.Is(err, manifest.ErrMaybeSaved) {
					t.Errorf("%s = %v, want ErrMaybeSaved", step.name, err)
				}
				r.nextOwner()
				r.write(20, 22)
				r.flush()
				r.nextOwner()
			})
		}
	}
}

// TestManifestRenameLands late: the rename is still on its way when the
// caller's deadline passes; the step fails with ErrMaybeSaved, keeps the
// files, and the rename lands either before the next owner opens (it reads
// the new version) or after it sealed (its newer epoch wins, and the late
// version brings nothing back). The next owners find every acknowledged
// row, and rows deleted after the late version was written stay deleted.
func TestManifestRenameLands(t *testing.T) {
	for _, step := range lateSteps {
		for _, when := range []string{"before the next owner", "after the next owner"} {
			t.Run(step.name+" "+when, func(t *testing.T) {
				r, epoch := step.rig(t)
				isManifest := r.manifestOf(epoch)
				late := &vfs.Late{}
				r.fs.Set(func(op vfs.Op, name string) error {
					if op == vfs.OpRename && isManifest(name) && late.Held() == 0 {
						return late
					}
					return nil
				})
				err := step.run(r)
				r.fs.Set(nil)
				if !errors.Is(err, manifest.ErrMaybeSaved) || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("%s = %v, want ErrMaybeSaved from the deadline", step.name, err)
				}
				if late.Held() != 1 {
					t.Fatalf("%d renames held, want 1", late.Held())
				}
				if when == "before the next owner" {
					if err := late.Release(); err != nil {
						t.Errorf("the late rename: %v", err)
					}
					r.nextOwner()
					return
				}
				// The next owner's seal deletes the older epoch's files,
				// the late rename's source among them; on an object store
				// a copy under way may have read it already: put it back.
				src := filepath.Join(r.dir, r.pendingManifest(epoch)+".tmp")
				b, err := vfs.ReadFile(vfs.Default, src)
				if err != nil {
					t.Fatalf("the late rename's source: %v", err)
				}
				r.nextOwner()
				if _, err := vfs.Default.Stat(src); err == nil {
					t.Errorf("the next owner left %s", src)
				}
				writeFileBytes(t, src, b)
				// The next owner deletes rows the late version still holds.
				if err := r.tb.DropRange(bg, []byte("r000"), []byte("r002")); err != nil {
					t.Fatal(err)
				}
				r.forgetRows("r000", "r002")
				r.flush()
				if err := late.Release(); err != nil {
					t.Errorf("the late rename: %v", err)
				}
				r.nextOwner()
				if got := scan(t, r.tb, ReadOptions{Ranges: []RowRange{{Start: []byte("r000"), End: []byte("r002")}}}); got != "" {
					t.Fatalf("rows deleted after the late version was written are back: %s", got)
				}
			})
		}
	}
}

// pendingManifest returns the name of the one manifest version of epoch
// that has a temporary file in the rig's folder.
func (r *faultRig) pendingManifest(epoch int64) string {
	r.t.Helper()
	ms, err := filepath.Glob(filepath.Join(r.dir, fmt.Sprintf("%s-%d-v*.tmp", manifest.FileName, epoch)))
	if err != nil || len(ms) != 1 {
		r.t.Fatalf("temporary manifests of epoch %d: %v %v", epoch, ms, err)
	}
	return strings.TrimSuffix(filepath.Base(ms[0]), ".tmp")
}

func writeFileBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReopenAtTheSameEpochSkipsAMaybeSavedVersion: a flush's manifest
// version is still on its way when the tablet fails, and the tablet is
// opened again at the same epoch (a server reopens a merge's parents at
// their epoch). The reopened tablet must use neither that version number
// (a version is never written twice: the late rename would overwrite the
// new one) nor the file numbers it names (its files were kept for it).
// Before, the reopen failed: its seal made an SSTable under a number the
// kept files held.
func TestReopenAtTheSameEpochSkipsAMaybeSavedVersion(t *testing.T) {
	r := newEpochRig(t)
	r.write(0, 5)
	r.flush()
	r.write(5, 10)
	late := &vfs.Late{}
	isManifest := r.manifestOf(r.epoch)
	r.fs.Set(func(op vfs.Op, name string) error {
		if op == vfs.OpRename && isManifest(name) && late.Held() == 0 {
			return late
		}
		return nil
	})
	if err := r.tb.Flush(bg); !errors.Is(err, manifest.ErrMaybeSaved) {
		t.Errorf("Flush = %v, want ErrMaybeSaved", err)
	}
	r.fs.Set(nil)
	pending := r.pendingManifest(r.epoch)
	old, err := vfs.ReadFile(vfs.Default, filepath.Join(r.dir, pending+".tmp"))
	if err != nil {
		t.Fatal(err)
	}
	// The same owner opens the tablet again, at the same epoch.
	_ = r.tb.Close()
	r.tb = openTablet(t, r.options(r.fs))
	r.checkAcked()
	r.write(10, 15)
	r.flush()
	// Neither the version's temporary file nor the files it names were
	// written again.
	if b, err := vfs.ReadFile(vfs.Default, filepath.Join(r.dir, pending+".tmp")); err != nil || !bytes.Equal(b, old) {
		t.Fatalf("the pending version's temporary file was rewritten (%v)", err)
	}
	if err := late.Release(); err != nil {
		t.Fatalf("the late rename: %v", err)
	}
	r.nextOwner()
}
