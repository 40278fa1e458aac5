package tabletserver

// minGoMemoryHeadroom is the least the Go memory limit leaves above the
// engine's budgets for everything they do not bound on the heap: the
// indexes and filters of small SSTables, compaction and flush buffers,
// read buffers, gRPC, goroutine stacks. (The indexes and filters of
// larger files, and an SSTable writer's index block and filter bits, are
// held outside the heap by internal/offheap: the limit does not count
// them, and need not, as the collector's headroom does not double them.)
const minGoMemoryHeadroom = 64 << 20

// GoMemoryLimit returns the Go runtime memory limit (runtime/debug's
// SetMemoryLimit, or GOMEMLIMIT) that a process serving this one tablet
// server should set: the memtable hard limit plus the block cache, the
// memory the server's options let the engine hold, plus a headroom of a
// quarter of that and at least 64 MiB.
//
// The garbage collector otherwise lets the heap grow to twice what is
// live (GOGC=100) before it collects, so a server whose memtables and
// cache are full can take twice their memory from the machine; with the
// limit it collects sooner as the heap nears the budgets. The limit is
// soft: a live heap above it makes the collector run more, up to its cap
// of about half the CPU, never fail an allocation.
//
// The server never sets it: the garbage collector's settings belong to
// the process, which may run other servers too (a process running
// several adds up their limits). A command that runs one server sets it
// with debug.SetMemoryLimit, unless GOMEMLIMIT is in its environment (the
// user's choice wins).
func GoMemoryLimit(o Options) (int64, error) {
	o, err := o.withDefaults()
	if err != nil {
		return 0, err
	}
	budgets := o.MemtableHardLimit + o.CacheBytes
	return budgets + max(budgets/4, minGoMemoryHeadroom), nil
}
