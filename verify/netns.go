package verify

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoNetns marks a host where the cluster cannot be put in network
// namespaces: not root, no `ip` or `nft`, or `ip netns add` fails.
var ErrNoNetns = errors.New("verify: network namespaces are not possible here")

// netPrefix begins the name of every namespace, bridge and link a cluster
// makes, followed by the pid of the process that made it: a crashed run's
// leftovers are recognised (their pid is gone) and removed by the next.
const netPrefix = "tabv"

// netRange is the private /16 the namespaces take their addresses from;
// each cluster takes one /24 of it that no route on the host covers yet.
// Traffic goes only to loopback and to these addresses.
var netRange = netip.MustParsePrefix("10.231.0.0/16")

// cmdTimeout bounds each ip, nft and tc command.
const cmdTimeout = 10 * time.Second

// network is the private network of a cluster in namespaces: a bridge in
// the host's namespace holding the subnet's first address (where etcd
// listens), and per process a namespace joined to the bridge by a veth
// pair, holding one address of the subnet and no default route:
//
//	host namespace                       namespace tabv<pid>n<i>
//	etcd on 10.231.K.1 ── tabv<pid>br ── tabv<pid>h<i> ═ veth ═ tabv<pid>n<i> 10.231.K.<10+i>
//
// Faults are nftables rules inside a namespace (a table of its own,
// replaced whole, gone with the namespace) and tbf rate limits on both
// ends of its veth pair.
type network struct {
	prefix string // netPrefix + pid
	bridge string
	subnet netip.Prefix
	host   netip.Addr // the bridge's address
	nodes  map[string]*netNode
	logf   func(format string, args ...any)
}

// netNode is one process's namespace.
type netNode struct {
	ns       string     // the namespace's name
	hostLink string     // the veth end on the bridge
	nsLink   string     // the veth end in the namespace
	addr     netip.Addr // nsLink's address
}

// CheckNetns reports (wrapping ErrNoNetns) why a cluster cannot run in
// network namespaces here, or nil if it can. It also removes a crashed
// run's leftovers.
func CheckNetns() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root (partition faults need root)", ErrNoNetns)
	}
	for _, bin := range []string{"ip", "nft", "tc"} {
		if _, err := exec.LookPath(bin); err != nil {
			hint := ""
			if bin == "nft" {
				hint = " (`make nftables` installs it)"
			}
			return fmt.Errorf("%w: no %s on the PATH%s", ErrNoNetns, bin, hint)
		}
	}
	removeLeftovers(func(string, ...any) {})
	probe := fmt.Sprintf("%s%dprobe", netPrefix, os.Getpid())
	if _, err := run("ip", "netns", "add", probe); err != nil {
		return fmt.Errorf("%w: %v", ErrNoNetns, err)
	}
	if _, err := run("ip", "netns", "del", probe); err != nil {
		return fmt.Errorf("%w: %v", ErrNoNetns, err)
	}
	return nil
}

// newNetwork makes the bridge on a free /24 of netRange. On error it
// removes what it made.
func newNetwork(logf func(format string, args ...any)) (_ *network, err error) {
	if err := CheckNetns(); err != nil {
		return nil, err
	}
	removeLeftovers(logf)
	pid := os.Getpid()
	n := &network{prefix: fmt.Sprintf("%s%d", netPrefix, pid), nodes: map[string]*netNode{}, logf: logf}
	n.bridge = n.prefix + "br"
	if n.subnet, err = freeSubnet(pid); err != nil {
		return nil, err
	}
	n.host = n.subnet.Addr().Next()
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	for _, args := range [][]string{
		{"link", "add", n.bridge, "type", "bridge"},
		{"addr", "add", netip.PrefixFrom(n.host, n.subnet.Bits()).String(), "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	} {
		if _, err := run("ip", args...); err != nil {
			return nil, err
		}
	}
	logf("network namespaces on %s: bridge %s %s", n.subnet, n.bridge, n.host)
	return n, nil
}

// freeSubnet picks a /24 of netRange that no route and no address of the
// host covers, starting at one drawn from the pid so that concurrent runs
// rarely try the same.
func freeSubnet(pid int) (netip.Prefix, error) {
	base := netRange.Addr().As4()
	for i := range 254 {
		k := byte((pid+i)%254 + 1)
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{base[0], base[1], k, 0}), 24)
		used, err := routed(p)
		if err != nil {
			return netip.Prefix{}, err
		}
		if !used {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("verify: every /24 of %s is routed already on this host", netRange)
}

// routed reports whether a route other than the default one covers p or
// lies inside it, in any routing table (the local table lists the host's
// own addresses).
func routed(p netip.Prefix) (bool, error) {
	for _, sel := range []string{"match", "root"} {
		out, err := run("ip", "-4", "-o", "route", "show", "table", "all", sel, p.String())
		if err != nil {
			return false, err
		}
		for line := range strings.Lines(out) {
			if f := strings.Fields(line); len(f) > 0 && f[0] != "default" {
				return true, nil
			}
		}
	}
	// `ip route get` must not name a device of ours or a local address.
	out, err := run("ip", "-4", "route", "get", p.Addr().Next().String())
	if err != nil {
		return false, err
	}
	return strings.HasPrefix(out, "local ") || strings.Contains(out, "dev "+netPrefix), nil
}

// addNode makes a namespace for the named process, joined to the bridge,
// with the subnet's address 10+i.
func (n *network) addNode(i int) (*netNode, error) {
	if i < 0 || i > 200 {
		return nil, fmt.Errorf("verify: no address for namespace %d", i)
	}
	a := n.subnet.Addr().As4()
	a[3] = byte(10 + i)
	nd := &netNode{ns: fmt.Sprintf("%sn%d", n.prefix, i), hostLink: fmt.Sprintf("%sh%d", n.prefix, i),
		nsLink: fmt.Sprintf("%sn%d", n.prefix, i), addr: netip.AddrFrom4(a)}
	steps := [][]string{
		{"netns", "add", nd.ns},
		{"link", "add", nd.hostLink, "type", "veth", "peer", "name", nd.nsLink},
		{"link", "set", nd.hostLink, "master", n.bridge, "up"},
		{"link", "set", nd.nsLink, "netns", nd.ns},
		{"-n", nd.ns, "addr", "add", netip.PrefixFrom(nd.addr, n.subnet.Bits()).String(), "dev", nd.nsLink},
		{"-n", nd.ns, "link", "set", nd.nsLink, "up"},
		{"-n", nd.ns, "link", "set", "lo", "up"},
	}
	for _, args := range steps {
		if _, err := run("ip", args...); err != nil {
			return nil, err
		}
	}
	n.nodes[nd.ns] = nd
	return nd, nil
}

// Close removes the namespaces, their links and the bridge. Rules and
// rate limits go with them.
func (n *network) Close() error {
	var errs []error
	for _, nd := range n.nodes {
		if _, err := run("ip", "netns", "del", nd.ns); err != nil {
			errs = append(errs, err)
		}
		// The host end goes with its peer; deleting it makes sure.
		run("ip", "link", "del", nd.hostLink)
	}
	if _, err := run("ip", "link", "del", n.bridge); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// leftoverName matches the namespaces and links a run makes: the prefix,
// the pid, a suffix.
var leftoverName = regexp.MustCompile(`^` + netPrefix + `([0-9]+)(br|probe|[hn][0-9]+)$`)

// removeLeftovers removes the namespaces and links of runs whose process
// is gone.
func removeLeftovers(logf func(format string, args ...any)) {
	gone := func(name string) bool {
		m := leftoverName.FindStringSubmatch(name)
		if m == nil {
			return false
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil {
			return false
		}
		return processGone(pid)
	}
	if out, err := run("ip", "netns", "list"); err == nil {
		for line := range strings.Lines(out) {
			if f := strings.Fields(line); len(f) > 0 && gone(f[0]) {
				logf("removing namespace %s, left by a run that is gone", f[0])
				run("ip", "netns", "del", f[0])
			}
		}
	}
	if out, err := run("ip", "-o", "link", "show"); err == nil {
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			// "12: tabv123h1@if11: <...>"
			f := strings.Fields(sc.Text())
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if gone(name) {
				logf("removing link %s, left by a run that is gone", name)
				run("ip", "link", "del", name)
			}
		}
	}
}

// processGone reports whether pid has exited: no such process, or a
// zombie not reaped yet (a killed run whose parent has not waited, or an
// init that reaps slowly).
func processGone(pid int) bool {
	if syscall.Kill(pid, 0) == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// "pid (comm) S ...": the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// nftTable is the table of a namespace's fault rules.
const nftTable = "tabv"

// setRules replaces the namespace's fault rules: in and out are rule
// lines for its input and output hooks. Rules that drop rather than
// reject make a black hole, as a real partition does.
func (nd *netNode) setRules(in, out []string) error {
	var b strings.Builder
	// Adding, then deleting, then defining the table replaces it in one
	// transaction whether or not it existed.
	fmt.Fprintf(&b, "table inet %s\ndelete table inet %s\ntable inet %s {\n", nftTable, nftTable, nftTable)
	fmt.Fprintf(&b, "  chain in {\n    type filter hook input priority 0; policy accept;\n")
	for _, r := range in {
		fmt.Fprintf(&b, "    %s\n", r)
	}
	fmt.Fprintf(&b, "  }\n  chain out {\n    type filter hook output priority 0; policy accept;\n")
	for _, r := range out {
		fmt.Fprintf(&b, "    %s\n", r)
	}
	b.WriteString("  }\n}\n")
	_, err := runInput(b.String(), "ip", "netns", "exec", nd.ns, "nft", "-f", "-")
	return err
}

// clearRules removes the namespace's fault rules.
func (nd *netNode) clearRules() error {
	_, err := runInput(fmt.Sprintf("table inet %s\ndelete table inet %s\n", nftTable, nftTable),
		"ip", "netns", "exec", nd.ns, "nft", "-f", "-")
	return err
}

// setRate limits both directions of the node's link to rate (tc's units,
// e.g. "256kbit") with a token bucket.
func (nd *netNode) setRate(rate string) error {
	tbf := []string{"root", "tbf", "rate", rate, "burst", "16kbit", "latency", "500ms"}
	if _, err := run("tc", append([]string{"qdisc", "replace", "dev", nd.hostLink}, tbf...)...); err != nil {
		return err
	}
	_, err := run("ip", append([]string{"netns", "exec", nd.ns, "tc", "qdisc", "replace", "dev", nd.nsLink}, tbf...)...)
	return err
}

// clearRate removes the rate limits.
func (nd *netNode) clearRate() error {
	_, err1 := run("tc", "qdisc", "del", "dev", nd.hostLink, "root")
	_, err2 := run("ip", "netns", "exec", nd.ns, "tc", "qdisc", "del", "dev", nd.nsLink, "root")
	return errors.Join(err1, err2)
}

// run runs a command for at most cmdTimeout and returns its output; the
// error holds the command and what it printed.
func run(name string, args ...string) (string, error) {
	return runInput("", name, args...)
}

func runInput(stdin, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("verify: %s %s: %v: %s", name, strings.Join(args, " "), err,
			strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}
