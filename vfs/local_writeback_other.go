//go:build !linux

package vfs

import "os"

// newLocalWritable returns f itself: only Linux has sync_file_range.
func newLocalWritable(f *os.File) Writable { return f }
