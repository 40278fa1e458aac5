// Package wal is the commit-log format, a durable format of its own at the
// top of the tree (the engine, the tablet server and package sharedlog,
// which frames its records the same way, import it): the write-ahead log
// of one tablet, segment files of CRC32C-framed records, written with group commit so that
// concurrent writers share one fsync (docs/CONTRACTS.md §3 "Commit log").
// Its files live on a vfs.FS (the local disk by default): a segment is
// created, or on a local disk takes over the file of a removed one
// (recycle.go), then written through the same handle until it is rotated.
//
// The log knows nothing of what a record means; the tablet engine encodes one
// row's mutation batch (with its sequence number) as the payload. On open the
// engine first replays the log from its manifest's replay point, then opens
// the log for new writes, which always go to a fresh segment:
//
//	last, err := wal.Replay(fsys, dir, replayPoint, func(p []byte) error {
//		return applyBatch(p) // p is only valid during the call
//	})
//	l, err := wal.Open(wal.Options{Dir: dir, FS: fsys})
//	defer l.Close()
//	t, err := l.Write(record) // under the engine's commit mutex: log order = seq order
//	err = l.Wait(t)           // outside it: concurrent waiters share one fsync
//
// After a flush the engine calls Rotate, records the returned segment number
// in its manifest as the new replay point, and then calls RemoveBefore with it
// (which keeps a few of the removed files for the next segments to reuse).
//
// Options.SyncMode says when Wait returns (see SyncMode): in SyncBuffered a
// flusher goroutine owned by the log hands records to the file system in
// the background, and Wait returns once the record is buffered.
//
// A failed fsync poisons the log: every later Write, Wait and Append returns
// the error. The log never retries an fsync, because after a failure the
// kernel may have dropped the dirty pages and a retry that succeeds proves
// nothing (the "fsyncgate" lesson from PostgreSQL).
package wal
