// Package sharedlog is the commit log a tablet server shares between all
// the tablets it serves (docs/CONTRACTS.md §3 "Commit log"): one sequence
// of segments per server incarnation, in <root>/logs/<name>/, holding the
// records of every tablet tagged with the tablet's name and its owner's
// epoch. Concurrent writers of different tablets share one write and one
// fsync (or one object PUT on an object store) per group-commit round, so
// the cost of durable writes does not grow with the number of tablets
// written; Bigtable keeps one log per tablet server for the same reason.
// It is a server-wide durable format, not a part of one tablet's engine, so
// it sits at the top of the tree: the engine and the tablet server write
// and replay it, and the master's log GC names its folders (Dir; storepath.Logs)
// without importing the engine.
//
// A tablet engine attaches to the log and gets a Handle with the same
// calls as its own wal.Log. After each flush the engine moves its
// pin (the oldest segment it still needs) forward with RemoveBefore; the
// log deletes the segments no pin needs. When the log grows past
// Options.MaxBytes it names the tablets pinning the oldest segment
// (Options.OnPressure) so the server flushes them.
//
// Recovery reads another server's log (Replay): a tablet's manifest names
// the log and the segment its unflushed records start in. The records of a
// foreign log are read once per server and kept, grouped by tablet, in a
// cache bounded while it reads (past half of Options.CacheBytes in a local
// spill file), so the tablets of a dead server that land on this server
// do not each read the whole log again. Replay proves it read every
// segment whole: a segment started by rotation records the final size of
// the one before it (wal format version 2), and a segment that
// reads short (an object store listing that lags, a lost part) is an
// error, never records skipped. Reads never change the log: its
// owner may still be running (a paused, fenced server), and what it
// appends later is read incrementally the next time.
package sharedlog
