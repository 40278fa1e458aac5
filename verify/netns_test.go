package verify

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// listenEnv makes the test binary, re-run inside a namespace, a TCP
// server on the address it names (TestNetnsListenHelper).
const listenEnv = "TABULA_VERIFY_NETNS_LISTEN"

// needNetns skips a test where namespaces are impossible, unless
// TABULA_REQUIRE_NETNS=1 (make test), which fails it.
func needNetns(t *testing.T) {
	t.Helper()
	if err := CheckNetns(); err != nil {
		if os.Getenv("TABULA_REQUIRE_NETNS") == "1" || !errors.Is(err, ErrNoNetns) {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// TestNetnsListenHelper is not a test: run by TestPartitionRulesCutAndHeal
// inside a namespace, it answers "ok" to every connection until its stdin
// closes.
func TestNetnsListenHelper(t *testing.T) {
	addr := os.Getenv(listenEnv)
	if addr == "" {
		t.Skip("a helper process of TestPartitionRulesCutAndHeal")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	go func() {
		io.Copy(io.Discard, os.Stdin)
		l.Close()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Write([]byte("ok"))
		c.Close()
	}
}

// TestPartitionRulesCutAndHeal: a process in a namespace of the network is
// reachable at its address from the host; the isolating rules black-hole
// it, clearing them heals it, a rate limit is set and removed; closing the
// network leaves no namespace or link behind.
func TestPartitionRulesCutAndHeal(t *testing.T) {
	needNetns(t)
	n, err := newNetwork(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			n.Close()
		}
	}()
	if !netRange.Contains(n.host) || n.subnet.Bits() != 24 {
		t.Fatalf("network on %s (host %s), want a /24 of %s", n.subnet, n.host, netRange)
	}
	nd, err := n.addNode(0)
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.AddrPortFrom(nd.addr, procPort).String()
	helper := exec.Command("ip", "netns", "exec", nd.ns, os.Args[0], "-test.run=^TestNetnsListenHelper$")
	helper.Env = append(os.Environ(), listenEnv+"="+addr)
	helper.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, _ := helper.StdinPipe()
	stdout, _ := helper.StdoutPipe()
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		helper.Wait()
	}()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("helper in %s: %q, %v", nd.ns, line, err)
	}
	go io.Copy(io.Discard, stdout) // the helper's test summary

	reach := func(timeout time.Duration) error {
		c, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(timeout))
		b, err := io.ReadAll(c)
		if err == nil && string(b) != "ok" {
			err = fmt.Errorf("read %q", b)
		}
		return err
	}
	if err := reach(5 * time.Second); err != nil {
		t.Fatalf("before any rule: %v", err)
	}
	if err := nd.setRules([]string{fmt.Sprintf("iifname %q drop", nd.nsLink)}, []string{fmt.Sprintf("oifname %q drop", nd.nsLink)}); err != nil {
		t.Fatal(err)
	}
	// A black hole: the dial times out (it is never refused).
	var nerr net.Error
	if err := reach(300 * time.Millisecond); !errors.As(err, &nerr) || !nerr.Timeout() {
		t.Fatalf("isolated: %v, want a timeout", err)
	}
	if err := nd.clearRules(); err != nil {
		t.Fatal(err)
	}
	if err := reach(5 * time.Second); err != nil {
		t.Fatalf("healed: %v", err)
	}
	if err := nd.setRate("256kbit"); err != nil {
		t.Fatal(err)
	}
	if err := nd.clearRate(); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	helper.Wait()
	closed = true
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if left := netLeftovers(t, n.prefix); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestLeftoversOfAGoneRunAreRemoved: a namespace and a bridge named for a
// pid that no longer runs are removed; those of a live pid are kept.
func TestLeftoversOfAGoneRunAreRemoved(t *testing.T) {
	needNetns(t)
	gone := 4194000 // near the largest pid; searched down for a free one
	for syscall.Kill(gone, 0) != syscall.ESRCH {
		gone--
	}
	dead := fmt.Sprintf("%s%d", netPrefix, gone)
	live := fmt.Sprintf("%s%d", netPrefix, os.Getpid())
	for _, args := range [][]string{
		{"netns", "add", dead + "n3"}, {"link", "add", dead + "br", "type", "bridge"},
		{"netns", "add", live + "n9"},
	} {
		if _, err := run("ip", args...); err != nil {
			t.Fatal(err)
		}
	}
	defer run("ip", "netns", "del", live+"n9")
	defer run("ip", "netns", "del", dead+"n3")
	defer run("ip", "link", "del", dead+"br")
	removeLeftovers(t.Logf)
	if left := netLeftovers(t, dead); len(left) > 0 {
		t.Errorf("left behind by pid %d: %v", gone, left)
	}
	if left := netLeftovers(t, live); len(left) != 1 {
		t.Errorf("the live run's namespaces: %v, want its one namespace kept", left)
	}
}

// netLeftovers lists the namespaces and host links of the run whose
// prefix is netPrefix+pid.
func netLeftovers(t *testing.T, prefix string) []string {
	t.Helper()
	var out []string
	for _, args := range [][]string{{"netns", "list"}, {"-o", "link", "show"}} {
		s, err := run("ip", args...)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(s) {
			for _, f := range strings.Fields(line) {
				name, _, _ := strings.Cut(strings.TrimSuffix(f, ":"), "@")
				if m := leftoverName.FindStringSubmatch(name); m != nil && netPrefix+m[1] == prefix {
					out = append(out, name)
				}
			}
		}
	}
	return out
}

// TestAZombieRunIsGone: a run killed but not yet reaped (a zombie) counts
// as gone, so its leftovers are removed; a live process does not.
func TestAZombieRunIsGone(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	if processGone(cmd.Process.Pid) {
		t.Fatal("a running process counts as gone")
	}
	cmd.Process.Kill()
	// Without Wait it stays a zombie; the kernel marks it within moments.
	deadline := time.Now().Add(10 * time.Second)
	for !processGone(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("a killed, unreaped process does not count as gone")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if processGone(os.Getpid()) {
		t.Fatal("this process counts as gone")
	}
}
