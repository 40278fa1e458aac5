package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/internal/seaweed/seaweedtest"
)

// TestVerifyOnASlowThrottlingStore runs a short `tabula verify run
// --object-store` with only the store's faults: SeaweedFS restarted, its
// answers held back seconds, every request throttled with 503 SlowDown,
// and connections cut before the store and in its answer, each at least
// once (`make soak` runs every fault three times and more). Any lost
// acknowledged write, phantom, anomaly or unrecovered fault fails it; the
// report gives each fault's unavailability after the repair. The fault
// sequence follows -seed.
func TestVerifyOnASlowThrottlingStore(t *testing.T) {
	slow(t)
	seaweedtest.Need(t)
	seed := newRand(t).Uint64()>>1 | 1
	dir := t.TempDir()
	args := []string{"verify", "run", "--object-store",
		"--faults", "store-restart,store-slow,store-throttle,store-cut",
		"--duration", "5s",
		"--min-faults-per-kind", "1",
		"--fault-interval", "1s",
		"--recovery-timeout", "1m",
		"--lease-ttl", ttlFlag,
		"--seed", fmt.Sprint(seed),
		"--data-dir", dir,
		"--keep",
		"--writers", "4",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.SysProcAttr = procAttr()
	out, err := cmd.CombinedOutput()
	t.Logf("tabula %s:\n%s", strings.Join(args, " "), out)
	if err != nil {
		logs, _ := filepath.Glob(filepath.Join(dir, "cluster", "logs", "*.log"))
		for _, l := range logs {
			p := &proc{name: filepath.Base(l), log: l}
			t.Logf("---- %s ----\n%s", l, p.tail(60))
		}
		t.Fatalf("tabula verify run (seed %d) failed: %v", seed, err)
	}
	if !strings.Contains(string(out), "result: OK") {
		t.Fatalf("tabula verify run exited 0 without reporting OK")
	}
	if !strings.Contains(string(out), "after repair p50 / max") {
		t.Errorf("the report has no column for the unavailability after the repair")
	}
	for _, k := range []string{"store-restart", "store-slow", "store-throttle", "store-cut"} {
		// kind, count, the "p50 / max" columns, nothing unrecovered.
		row := regexp.MustCompile(`(?m)^  ` + k + ` +[1-9][0-9]*( +\S+ / \S+){4} +0$`)
		if !row.Match(out) {
			t.Errorf("the report has no line for %s with its unavailability and nothing unrecovered", k)
		}
	}
}
