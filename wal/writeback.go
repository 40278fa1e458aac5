package wal

import "github.com/tabuladb/tabula/vfs"

// writebackEvery is how many written, unsynced bytes of the active
// segment a round lets accumulate before it asks the OS to start writing
// them to the device (vfs.WritebackStarter): pebble's BytesPerSync. The
// fsync that closes a segment when a tablet flushes runs under the
// tablet's commit mutex, so every writer waits for it; begun early, it
// waits for the last half MiB instead of the whole segment.
const writebackEvery = 512 << 10

// startWriteback starts the write-out of the active segment f's bytes up
// to end when enough have been written since the last start. Called by
// the running round only. A file system that cannot is not asked again
// for this segment.
func (l *Log) startWriteback(f vfs.Writable, end int64) {
	if end-l.writtenBack < writebackEvery {
		return
	}
	if !vfs.StartWriteback(f, l.writtenBack, end-l.writtenBack) {
		end = 1 << 62 // never again in this segment
	}
	l.writtenBack = end
}
