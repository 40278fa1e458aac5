package vfs

import (
	"errors"
	"os"
	"sort"
)

// Default is the local file system.
var Default FS = Local{}

// Local is the operating system's file system.
type Local struct{}

type localFile struct {
	*os.File
	size int64
}

func (f localFile) Size() int64 { return f.size }

// Create creates name exclusively (0644).
func (Local) Create(name string) (Writable, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return newLocalWritable(f), nil
}

// Open opens name for reading.
func (Local) Open(name string) (Readable, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return localFile{File: f, size: st.Size()}, nil
}

// Truncate cuts name to size bytes and syncs it.
func (Local) Truncate(name string, size int64) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// Remove removes a file or empty directory.
func (Local) Remove(name string) error { return os.Remove(name) }

// RemoveAll removes a tree.
func (Local) RemoveAll(name string) error { return os.RemoveAll(name) }

// Rename renames atomically: a failed rename did not happen
// (ErrNotApplied).
func (Local) Rename(oldname, newname string) error {
	return NotApplied(os.Rename(oldname, newname))
}

// MkdirAll creates dir and its parents (0755).
func (Local) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

// List lists dir, sorted by name.
func (Local) List(dir string) ([]Entry, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(des))
	for i, d := range des {
		out[i] = Entry{Name: d.Name(), IsDir: d.IsDir()}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Stat describes name (lstat: a symbolic link is described, not followed).
func (Local) Stat(name string) (Info, error) {
	st, err := os.Lstat(name)
	if err != nil {
		return Info{}, err
	}
	return Info{Name: st.Name(), Size: st.Size(), ModTime: st.ModTime(), Mode: st.Mode()}, nil
}

// SyncDir fsyncs the directory.
func (Local) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}
