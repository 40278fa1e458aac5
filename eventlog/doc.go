// Package eventlog keeps a process's recent operator events in memory: the
// log records that carry an "event" attribute (a split, a move, a flush, a
// compaction, a leader change...). Its Handler wraps the process's
// slog.Handler, passes every record on unchanged and copies the records
// with an "event" attribute into a Ring of fixed size, from which the
// status pages show "recent events" and a tablet server reports its
// events to the master (docs/OPERATIONS.md "Status page").
//
// It knows nothing of servers: the components only log, and whoever
// builds their logger decides whether events are kept.
package eventlog
