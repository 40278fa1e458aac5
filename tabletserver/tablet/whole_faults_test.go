package tablet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/vfs"
)

// newWholeEpochRig is newEpochRig on the object store's paths: every
// manifest is one whole-file write (vfs.WholeFiles), failed as the test
// says.
func newWholeEpochRig(t *testing.T) *faultRig {
	r := &faultRig{t: t, dir: t.TempDir(), fs: vfs.NewFaulty(vfs.Default), epoch: 1, whole: true}
	r.tb = openTablet(t, r.options(r.fs))
	return r
}

// TestManifestPutAnswerLostOnAnObjectStore: the PUT of a flush's manifest
// lands and its answer is lost. The save reads the version back, finds it
// whole and goes on: the flush succeeds, the tablet keeps taking writes,
// and the next owner reads everything acknowledged.
func TestManifestPutAnswerLostOnAnObjectStore(t *testing.T) {
	r := newWholeEpochRig(t)
	r.write(0, 5)
	isManifest := r.manifestOf(r.epoch)
	r.fs.Set(func(op vfs.Op, name string) error {
		if op == vfs.OpWriteWhole && isManifest(name) {
			return &vfs.AfterApply{Err: vfs.Failf("answer lost")}
		}
		return nil
	})
	r.flush()
	r.fs.Set(nil)
	r.write(5, 10)
	r.flush()
	if len(r.reported()) != 0 {
		t.Fatalf("the tablet failed: %v", r.reported())
	}
	r.nextOwner()
}

// TestReopenAtTheSameEpochSkipsAMaybeSavedPutOnAnObjectStore: a flush's
// manifest PUT is still on its way when the tablet fails, and the tablet
// is opened again at the same epoch. The reopened tablet must write
// neither that version's name (the late PUT would land over it) nor an
// SSTable under the file numbers its state reserves: it learns both from
// the temporary file written after the failure, or, when that write fails
// too, from the process's own record. The late PUT lands at the end under
// its own, older name; the next owner reads everything acknowledged.
func TestReopenAtTheSameEpochSkipsAMaybeSavedPutOnAnObjectStore(t *testing.T) {
	for _, recordFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("record fails %v", recordFails), func(t *testing.T) {
			r := newWholeEpochRig(t)
			r.write(0, 5)
			r.flush()
			r.write(5, 10)
			late := &vfs.Late{}
			isManifest := r.manifestOf(r.epoch)
			var pending string
			r.fs.Set(func(op vfs.Op, name string) error {
				switch {
				case op != vfs.OpWriteWhole:
				case isManifest(name) && late.Held() == 0:
					pending = filepath.Base(name)
					return late
				case recordFails && strings.HasSuffix(name, ".tmp"):
					return vfs.Failf("the store is still down")
				}
				return nil
			})
			if err := r.tb.Flush(bg); !errors.Is(err, manifest.ErrMaybeSaved) {
				t.Errorf("Flush = %v, want ErrMaybeSaved", err)
			}
			r.fs.Set(nil)
			path := filepath.Join(r.dir, pending)
			if _, err := os.Stat(path + ".tmp"); (err == nil) == recordFails {
				t.Fatalf("the save's temporary file: %v (the record's write fails: %v)", err, recordFails)
			}
			// The same owner opens the tablet again, at the same epoch.
			_ = r.tb.Close()
			r.tb = openTablet(t, r.options(r.fs))
			r.checkAcked()
			r.write(10, 15)
			r.flush()
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the reopened tablet wrote %s, the version still on its way (%v)", pending, err)
			}
			if err := late.Release(); err != nil {
				t.Fatalf("the late PUT: %v", err)
			}
			r.nextOwner()
		})
	}
}

// TestCreateAgainAfterASealOfUnknownOutcomeOnAnObjectStore: the first
// open of a new tablet fails because its seal's PUT is still on its way;
// the open is tried again at the same epoch, and finds no manifest yet.
// It must not save that version's name again (the late PUT would land
// over it, with the first attempt's state): it seals at the version
// after. The late PUT lands at the end; the next owner reads every row.
func TestCreateAgainAfterASealOfUnknownOutcomeOnAnObjectStore(t *testing.T) {
	r := &faultRig{t: t, dir: t.TempDir(), fs: vfs.NewFaulty(vfs.Default), epoch: 1, whole: true}
	late := &vfs.Late{}
	isManifest := r.manifestOf(r.epoch)
	var pending string
	r.fs.Set(func(op vfs.Op, name string) error {
		if op == vfs.OpWriteWhole && isManifest(name) && late.Held() == 0 {
			pending = filepath.Base(name)
			return late
		}
		return nil
	})
	if tb, err := Open(r.options(r.fs)); !errors.Is(err, manifest.ErrMaybeSaved) {
		if err == nil {
			tb.Close()
		}
		t.Fatalf("the first open = %v, want ErrMaybeSaved", err)
	}
	r.fs.Set(nil)
	r.tb = openTablet(t, r.options(r.fs))
	r.write(0, 5)
	r.flush()
	if _, err := os.Stat(filepath.Join(r.dir, pending)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the second open wrote %s, the version still on its way (%v)", pending, err)
	}
	if err := late.Release(); err != nil {
		t.Fatalf("the late PUT: %v", err)
	}
	r.nextOwner()
}
