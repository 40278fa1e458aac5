//go:build linux

package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Reuse renames oldname to newname with renameat2(RENAME_NOREPLACE), so
// that an existing newname is never replaced (a second writer of the same
// log loses, as with Create's O_EXCL), and returns it open for writing
// from offset 0. The file is opened before the rename, so a failure
// leaves oldname as it was (ErrNotApplied). A file system without
// RENAME_NOREPLACE gives errors.ErrUnsupported.
func (Local) Reuse(oldname, newname string) (Writable, error) {
	f, err := os.OpenFile(oldname, os.O_WRONLY, 0)
	if err != nil {
		return nil, NotApplied(err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, oldname, unix.AT_FDCWD, newname, unix.RENAME_NOREPLACE); err != nil {
		f.Close()
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
			return nil, errReuseUnsupported
		}
		return nil, NotApplied(&os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err})
	}
	return newLocalWritable(f), nil
}

var _ Reuser = Local{}
