package main

import (
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"

	"github.com/tabuladb/tabula/tabletserver"
)

// The tablet server command sets the Go memory limit from its budgets,
// unless GOMEMLIMIT is in the environment.
func TestGoMemoryLimitFollowsTheBudgets(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts := tabletserver.Options{ID: "ts-1", DataDir: t.TempDir(), Etcd: []string{"127.0.0.1:2379"}, CacheBytes: 32 << 20, MemtableSoftLimit: 64 << 20, MemtableHardLimit: 96 << 20}
	want, err := tabletserver.GoMemoryLimit(opts)
	if err != nil {
		t.Fatal(err)
	}

	t.Setenv("GOMEMLIMIT", "")
	debug.SetMemoryLimit(math.MaxInt64)
	setGoMemoryLimit(opts, log)
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Fatalf("limit = %d, want %d from the budgets", got, want)
	}

	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(math.MaxInt64)
	setGoMemoryLimit(opts, log)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("with GOMEMLIMIT set, limit = %d, want it left alone", got)
	}
}
