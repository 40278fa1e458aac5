package vfs

// WritebackStarter is implemented by writables that can ask the operating
// system to start writing bytes already written to the device, without
// waiting for it (Linux: sync_file_range with SYNC_FILE_RANGE_WRITE), so
// that a later Sync waits for the bytes written since, not for all of
// them: RocksDB's and pebble's bytes_per_sync. It promises nothing about
// durability; only Sync does.
type WritebackStarter interface {
	// StartWriteback starts the write-out of the bytes in [off, off+n).
	StartWriteback(off, n int64) error
}

// StartWriteback starts the write-out of [off, off+n) of w if w can
// (WritebackStarter), and reports whether it did.
func StartWriteback(w Writable, off, n int64) bool {
	s, ok := w.(WritebackStarter)
	return ok && s.StartWriteback(off, n) == nil
}
