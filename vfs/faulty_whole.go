package vfs

import (
	"errors"
	"io/fs"
)

// The whole-file operations Faulty can fail (see WholeFiles).
const (
	OpWriteWhole  Op = "writewhole"
	OpReadWhole   Op = "readwhole"
	OpRemoveWhole Op = "removewhole" // named by each file it removes
)

// WholeFiles returns f as an FS with whole files (WholeFiles), whose
// calls f fails like the others (OpWriteWhole: a PUT that fails before,
// after or late; OpReadWhole; OpRemoveWhole). Over an inner FS that has
// whole files they go to it; over one that has not (the local disk) a
// whole file is written under a temporary name and renamed, which is what
// an object store's PUT promises: all of it or nothing. So the engine's
// object-store paths run, faults and all, on a test's temporary folder.
// f itself stays without them: tests of the disk's paths are unchanged.
func (f *Faulty) WholeFiles() FS { return faultyWhole{f} }

type faultyWhole struct{ *Faulty }

var _ WholeFiles = faultyWhole{}

func (w faultyWhole) WriteWhole(name string, b []byte) error {
	return w.do(OpWriteWhole, name, func() error {
		err := writeWhole(w.inner, name, b)
		if err == nil {
			w.appeared(name)
		}
		return err
	})
}

func (w faultyWhole) ReadWhole(name string) ([]byte, error) {
	if err := w.read(OpReadWhole, name); err != nil {
		return nil, err
	}
	if iw, ok := w.inner.(WholeFiles); ok {
		return iw.ReadWhole(name)
	}
	return ReadFile(w.inner, name)
}

func (w faultyWhole) RemoveWhole(names []string) error {
	var errs []error
	for _, n := range names {
		errs = append(errs, w.do(OpRemoveWhole, n, func() error {
			var err error
			if iw, ok := w.inner.(WholeFiles); ok {
				err = iw.RemoveWhole([]string{n})
			} else if err = w.inner.Remove(n); errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
			if err == nil {
				w.vanished(n)
			}
			return err
		}))
	}
	return errors.Join(errs...)
}

// writeWhole publishes b as name on inner: by its own WriteWhole, or
// written under a temporary name, synced and renamed into place.
func writeWhole(inner FS, name string, b []byte) error {
	if iw, ok := inner.(WholeFiles); ok {
		return iw.WriteWhole(name, b)
	}
	tmp := name + ".whole~"
	err := WriteSynced(inner, tmp, b)
	if err == nil {
		err = inner.Rename(tmp, name)
	}
	if err != nil {
		_ = inner.Remove(tmp)
	}
	return err
}
