package e2e

import (
	"errors"
	"os"
	"os/exec"
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
	out := verifyRun(t, "partitions", 10*time.Minute, []string{
		"--faults", "server-etcd-cut,server-isolate,master-etcd-cut,slow-link,lossy-link",
		"--duration", "10s",
		"--min-faults-per-kind", "3",
		"--fault-interval", "500ms",
		"--recovery-timeout", "3m",
		"--writers", "4",
	}, func(pid int) { checkNoNetLeftovers(t, pid) })
	m := fenceLine.FindStringSubmatch(out)
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
