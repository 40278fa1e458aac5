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

// verifyRun runs `tabula verify run` with the test's own flags (faults,
// length, writers) plus those every e2e run shares: a seed drawn from
// -seed, a data folder kept for the processes' logs (E2E_KEEP keeps it
// after the test too), the lease TTL and porcupine's view of any
// non-linearizable row. after, if not nil, runs once the run has ended,
// pass or fail (a check that must not depend on the verdict). The test
// fails, with the tail of every process's log, unless the run exits 0 and
// reports OK; verifyRun returns the report.
func verifyRun(t *testing.T, name string, timeout time.Duration, flags []string, after func(pid int)) string {
	t.Helper()
	seed := newRand(t).Uint64()>>1 | 1
	dir := t.TempDir()
	if keepDirs {
		var err error
		if dir, err = os.MkdirTemp("", "tabula-e2e-"+name+"-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("E2E_KEEP: run files in %s", dir)
	}
	args := append([]string{"verify", "run"}, flags...)
	args = append(args,
		"--lease-ttl", ttlFlag,
		"--seed", fmt.Sprint(seed),
		"--data-dir", dir,
		"--keep",
		"--visualize", filepath.Join(dir, "visualize"),
	)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.SysProcAttr = procAttr()
	out, err := cmd.CombinedOutput()
	t.Logf("tabula %s:\n%s", strings.Join(args, " "), out)
	if after != nil && cmd.Process != nil {
		after(cmd.Process.Pid)
	}
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
	return string(out)
}
