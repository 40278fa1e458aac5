//go:build linux

package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// localWritable is a local file open for writing.
type localWritable struct{ *os.File }

func newLocalWritable(f *os.File) Writable { return localWritable{f} }

// StartWriteback starts the write-out of [off, off+n) and returns without
// waiting for it (sync_file_range(2), SYNC_FILE_RANGE_WRITE).
func (f localWritable) StartWriteback(off, n int64) error {
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	}); err != nil {
		return err
	}
	return serr
}

var _ WritebackStarter = localWritable{}
