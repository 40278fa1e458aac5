package tablet

import "fmt"

// The write guard (Options.Guard) keeps a tablet server that lost its lease
// from writing a tablet's shared files again. Such a server may have been
// paused (SIGSTOP, a long GC, swap) past its lease while the master gave the
// tablet to another server, which replayed the log and now saves its own
// MANIFEST in the same folder. When the old process wakes, its background
// flushes and compactions may run before its lease loop notices and fences:
// without the guard they could save an old MANIFEST over the new owner's or
// delete SSTables and log segments the new owner uses.
//
// The engine asks the guard immediately before every durable side effect on
// files another owner may rely on: each manifest save (flush, compaction,
// TTL drop, SetFamilies, a split's child manifests, a new tablet's first
// manifest), each deletion of an obsolete SSTable or of old commit log
// segments, and, as a cheap early exit, before a flush or compaction starts.
// When it refuses, the operation is abandoned without touching the
// manifest; only files the operation created itself and has not published
// are removed. Obsolete files it may not delete are left behind (garbage,
// never data loss).
//
// A window remains: a process paused between the guard's check and the
// rename that publishes the manifest (or the unlink of a file) still acts
// after waking. Closing it needs fencing by the storage itself, as HBase
// relies on HDFS lease recovery to revoke the old writer; a local or plain
// shared file system offers nothing like it. The guard shrinks the window
// from "any background work after the wake-up" to a few instructions.

// checkGuard asks Options.Guard whether the engine may now do what (a
// short description for the error and the log). A refusal is logged and
// returned wrapped in ErrGuardRefused and the guard's own error.
func (t *Tablet) checkGuard(what string) error {
	if t.opts.Guard == nil {
		return nil
	}
	err := t.opts.Guard()
	if err == nil {
		return nil
	}
	t.logger.Warn("write guard refused", "dir", t.dir, "op", what, "err", err)
	return fmt.Errorf("%w: %s: %w", ErrGuardRefused, what, err)
}
