package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVerifyUnderFaults runs a short `tabula verify run`: a cluster of real
// processes (tabula etcd, 2 masters, 3 tablet servers with 2 s leases)
// takes linked-list writes, read-modify-write counters and check-and-mutate
// chains while the agitator kill -9s and restarts tablet servers, pauses
// them past their lease, kill -9s the leader master and restarts etcd, at
// least three times each; then the checker reads the table back. Any lost
// acknowledged write, phantom row, counter or chain anomaly, history that
// is not linearizable, crash, or fault the writers did not recover from
// fails the test. The fault sequence follows -seed.
func TestVerifyUnderFaults(t *testing.T) {
	slow(t)
	seed := newRand(t).Uint64()>>1 | 1
	dir := t.TempDir()
	if keepDirs {
		var err error
		if dir, err = os.MkdirTemp("", "tabula-e2e-verify-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("E2E_KEEP: run files in %s", dir)
	}
	args := []string{"verify", "run",
		"--duration", "45s",
		"--min-faults-per-kind", "3",
		"--fault-interval", "2s",
		"--lease-ttl", ttlFlag,
		"--seed", fmt.Sprint(seed),
		"--data-dir", dir,
		"--keep",
		"--writers", "6",
		"--visualize", filepath.Join(dir, "visualize"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
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
}
