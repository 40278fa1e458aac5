package main

import (
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/tabuladb/tabula/tabletserver"
)

// setGoMemoryLimit gives the Go runtime a soft memory limit derived from
// the tablet server's budgets (tabletserver.GoMemoryLimit), so the heap
// does not grow to twice what is live before the collector runs. A
// GOMEMLIMIT in the environment is the user's choice and wins; options the
// server will refuse set nothing (Start reports them).
func setGoMemoryLimit(opts tabletserver.Options, log *slog.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit, err := tabletserver.GoMemoryLimit(opts)
	if err != nil {
		return
	}
	debug.SetMemoryLimit(limit)
	log.Info("go memory limit set from the memtable and cache budgets", "bytes", limit)
}
