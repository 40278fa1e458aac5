package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/verify"
)

// TestVerifyUnderPartitions runs a short `tabula verify run` with only the
// network partitions: every master and tablet server in a Linux network
// namespace of its own, and at least three times each a tablet server cut
// off from etcd (clients still reach it), a tablet server isolated, the
// leader master cut off from etcd, a slow link and a lossy link. Any lost
// acknowledged write, history that is not linearizable, crash or fault the
// writers did not recover from fails it, and so does a write the server
// cut off from etcd acknowledged after etcd had dropped its lease (the
// run's fence probe; at least one probe must be conclusive). The run must
// leave no namespace or link behind. It needs root, ip, tc and nft (`make
// nftables`); it skips without them, unless TABULA_REQUIRE_NETNS=1 (as
// `make test` sets), and in the secure pass (the dev certificates name
// loopback only).
func TestVerifyUnderPartitions(t *testing.T) {
	slow(t)
	if secureAll() {
		t.Skip("e2e: the partition run is plaintext (the dev certificates name loopback only); the plain pass runs it")
	}
	if err := verify.CheckNetns(); err != nil {
		if os.Getenv("TABULA_REQUIRE_NETNS") == "1" {
			t.Fatalf("TABULA_REQUIRE_NETNS=1 but %v", err)
		}
		if errors.Is(err, verify.ErrNoNetns) {
			t.Skipf("e2e: %v", err)
		}
		t.Fatal(err)
	}
	seed := newRand(t).Uint64()>>1 | 1
	dir := t.TempDir()
	if keepDirs {
		var err error
		if dir, err = os.MkdirTemp("", "tabula-e2e-partitions-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("E2E_KEEP: run files in %s", dir)
	}
	args := []string{"verify", "run",
		"--faults", "server-etcd-cut,server-isolate,master-etcd-cut,slow-link,lossy-link",
		"--duration", "10s",
		"--min-faults-per-kind", "3",
		"--fault-interval", "500ms",
		"--recovery-timeout", "3m",
		"--lease-ttl", ttlFlag,
		"--seed", fmt.Sprint(seed),
		"--data-dir", dir,
		"--keep",
		"--writers", "4",
		"--visualize", filepath.Join(dir, "visualize"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.SysProcAttr = procAttr()
	out, err := cmd.CombinedOutput()
	t.Logf("tabula %s:\n%s", strings.Join(args, " "), out)
	if cmd.Process != nil {
		checkNoNetLeftovers(t, cmd.Process.Pid)
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
	m := fenceLine.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("the report has no fence probe line (want %q)", fenceLine)
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 {
		t.Errorf("no fence probe was conclusive (the lease seen gone, probes sent after): %s", m[0])
	}
	if m[2] != "0" {
		t.Errorf("a tablet server cut off from etcd acknowledged a write after its lease was gone: %s", m[0])
	}
}

// fenceLine is the report's sum of the fence probes: conclusive probes,
// and acknowledged probes sent after the lease was gone.
var fenceLine = regexp.MustCompile(`fence probes \(server-etcd-cut\): \d+, (\d+) conclusive .*, (\d+) acknowledged`)

// checkNoNetLeftovers fails if a namespace or link named for the run's
// pid (tabv<pid>...) is still there.
func checkNoNetLeftovers(t *testing.T, pid int) {
	t.Helper()
	prefix := "tabv" + strconv.Itoa(pid)
	for _, args := range [][]string{{"netns", "list"}, {"-o", "link", "show"}} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			t.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
			continue
		}
		for line := range strings.Lines(string(out)) {
			if regexp.MustCompile(`\b` + prefix + `[a-z]`).MatchString(line) {
				t.Errorf("left behind by the run: %s", strings.TrimSpace(line))
			}
		}
	}
}
