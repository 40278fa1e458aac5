package verify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tabuladb/tabula/meta"
)

// ClusterOptions shape a local cluster of real processes. The zero value
// (plus Dir) is one etcd, two masters and three tablet servers with 2s
// leases.
type ClusterOptions struct {
	// Dir holds everything: etcd's data, the tablet storage root (or the
	// object store's data and each tablet server's own folder) and the
	// processes' logs. Required.
	Dir string
	// Binary is the tabula binary to run. The default is this process's
	// own executable.
	Binary string
	// Masters is the number of masters. The default is 2.
	Masters int
	// Servers is the number of tablet servers. The default is 3.
	Servers int
	// LeaseTTL is the tablet servers' lease TTL and the masters' election
	// session TTL. The default is 2s.
	LeaseTTL time.Duration
	// MemtableSize is the tablet servers' memtable flush size, as the
	// --memtable-size flag takes it. The default is "1MiB".
	MemtableSize string
	// ReadyTimeout bounds the wait for a process to come up. The default
	// is 60s.
	ReadyTimeout time.Duration
	// Secure runs every port with TLS (a dev CA and certificates in
	// Dir/tls; etcd wants client certificates) and the masters and tablet
	// servers with --auth. An admin grant and token for tlsconf.AdminName
	// are bootstrapped into etcd, and Cluster.NewClient uses them. The
	// default is plaintext with no authentication.
	Secure bool
	// ObjectStore keeps the tablets on SeaweedFS started by the cluster
	// (data in Dir/seaweed; the weed binary of `make tools` or
	// TABULA_WEED): the masters and tablet servers take its URL as
	// --storage, and each server has its own --data folder,
	// Dir/hosts/<id>, as if on its own host. The default is one local
	// folder, Dir/storage, that every server shares.
	ObjectStore bool
	// Namespaces puts every master and tablet server in a Linux network
	// namespace of its own, joined to etcd's by a veth pair and a bridge
	// (netns.go), so that partition faults (partition.go) can cut them
	// off. Needs root, ip, nft and tc; not with Secure or ObjectStore.
	// The default is every process on loopback.
	Namespaces bool
	// Logf reports progress. The default discards it.
	Logf func(format string, args ...any)
}

func (o ClusterOptions) withDefaults() (ClusterOptions, error) {
	if o.Dir == "" {
		return o, errors.New("verify: ClusterOptions.Dir is required")
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("verify: finding the tabula binary: %w", err)
		}
		o.Binary = exe
	}
	if o.Masters <= 0 {
		o.Masters = 2
	}
	if o.Servers <= 0 {
		o.Servers = 3
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 2 * time.Second
	}
	if o.MemtableSize == "" {
		o.MemtableSize = "1MiB"
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 60 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Namespaces && (o.Secure || o.ObjectStore) {
		return o, errors.New("verify: a cluster in network namespaces runs neither Secure nor on an ObjectStore")
	}
	return o, nil
}

// clusterName is the etcd key prefix's cluster name.
const clusterName = "verify"

// Cluster is a local cluster of real processes started from the tabula
// binary: `tabula etcd`, masters and tablet servers, each restartable
// with its address, ID and data.
type Cluster struct {
	o       ClusterOptions
	sec     security
	store   objectStore
	etcd    *proc
	masters []*proc
	servers []*proc
	// net and nodes (by process name) are the namespaces of a cluster
	// with Namespaces; nil otherwise.
	net   *network
	nodes map[string]*netNode
}

// StartCluster starts the object store (with ObjectStore), etcd, the
// masters (the first one leads) and the tablet servers, and waits until
// every server has registered. On error it stops what it started.
func StartCluster(ctx context.Context, o ClusterOptions) (_ *Cluster, err error) {
	o, err = o.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.ObjectStore {
		if err := checkWeed(); err != nil {
			return nil, err
		}
	}
	c := &Cluster{o: o}
	dirs := []string{filepath.Join(o.Dir, "logs")}
	if !o.ObjectStore {
		dirs = append(dirs, c.localStorage())
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if c.sec, err = newSecurity(o); err != nil {
		return nil, err
	}
	if err := c.startObjectStore(ctx); err != nil {
		return nil, err
	}
	if err := c.startNetwork(); err != nil {
		return nil, err
	}
	if c.etcd, err = c.etcdProc(); err != nil {
		return nil, err
	}
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := c.bootstrapAdmin(ctx); err != nil {
		return nil, err
	}
	for i := range o.Masters {
		m, err := c.masterProc(i)
		if err != nil {
			return nil, err
		}
		c.masters = append(c.masters, m)
		if err := m.start(); err != nil {
			return nil, err
		}
		if err := m.waitListening(o.ReadyTimeout); err != nil {
			return nil, err
		}
		if i == 0 {
			if err := c.waitLeader(ctx, m); err != nil {
				return nil, err
			}
		}
	}
	for i := range o.Servers {
		s, err := c.serverProc(i)
		if err != nil {
			return nil, err
		}
		c.servers = append(c.servers, s)
		if err := s.start(); err != nil {
			return nil, err
		}
		if err := s.waitListening(o.ReadyTimeout); err != nil {
			return nil, err
		}
	}
	if err := c.WaitServers(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// newProc prepares a process on a free port; listen is its flag naming
// that port.
func (c *Cluster) newProc(name, sub, listen string, args ...string) (*proc, error) {
	addr, ns, err := c.placeProc(name)
	if err != nil {
		return nil, err
	}
	args = append(append([]string{sub}, args...), listen, addr)
	return &proc{name: name, addr: addr, bin: c.o.Binary, args: args, netns: ns,
		log: filepath.Join(c.o.Dir, "logs", name+".log")}, nil
}

// etcdProc prepares `tabula etcd`.
func (c *Cluster) etcdProc() (*proc, error) {
	peer, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"--data-dir", filepath.Join(c.o.Dir, "etcd"), "--listen-peer", peer, "--unsafe-no-fsync"}
	return c.newProc("etcd", "etcd", "--listen-client", append(args, c.sec.tlsArgs(c.sec.pki.Etcd)...)...)
}

// masterProc prepares the i-th master (from 0).
func (c *Cluster) masterProc(i int) (*proc, error) {
	name := fmt.Sprintf("master-%d", i+1)
	args := append([]string{"--etcd", c.etcd.addr, "--cluster", clusterName, "--id", name},
		c.masterStorageArgs()...)
	args = append(args, "--session-ttl", c.o.LeaseTTL.String(), "--log-level", "info")
	return c.newProc(name, "master", "--listen", append(args, c.sec.serverArgs(c.sec.pki.Master)...)...)
}

// serverProc prepares the i-th tablet server (from 0).
func (c *Cluster) serverProc(i int) (*proc, error) {
	name := fmt.Sprintf("ts-%d", i+1)
	args := append([]string{"--etcd", c.etcd.addr, "--cluster", clusterName, "--id", name},
		c.serverStorageArgs(name)...)
	args = append(args, "--lease-ttl", c.o.LeaseTTL.String(), "--memtable-size", c.o.MemtableSize, "--log-level", "info")
	return c.newProc(name, "tabletserver", "--listen", append(args, c.sec.serverArgs(c.sec.pki.TabletServer)...)...)
}

// MasterAddrs returns the masters' addresses.
func (c *Cluster) MasterAddrs() []string {
	var a []string
	for _, m := range c.masters {
		a = append(a, m.addr)
	}
	return a
}

// EtcdAddr returns etcd's client address.
func (c *Cluster) EtcdAddr() string { return c.etcd.addr }

// Dir returns the cluster's directory.
func (c *Cluster) Dir() string { return c.o.Dir }

func (c *Cluster) all() []*proc {
	return append(append([]*proc{c.etcd}, c.masters...), c.servers...)
}

// startEtcd starts etcd and waits until it answers.
func (c *Cluster) startEtcd(ctx context.Context) error {
	if err := c.etcd.start(); err != nil {
		return err
	}
	if err := c.etcd.waitListening(c.o.ReadyTimeout); err != nil {
		return err
	}
	cli, err := c.etcdClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	deadline := time.Now().Add(c.o.ReadyTimeout)
	for {
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := meta.Probe(gctx, cli, meta.NewLayout(clusterName))
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("verify: etcd does not answer after %v: %w", c.o.ReadyTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// etcdClient connects to etcd; on a Secure cluster over TLS with the
// master's certificate.
func (c *Cluster) etcdClient() (meta.Store, error) {
	return meta.Dial(c.etcd.addr, c.sec.etcd, 2*time.Second)
}

// withEtcd runs read with a client of its own, for at most 2s.
func (c *Cluster) withEtcd(ctx context.Context, read func(context.Context, meta.Store) error) error {
	cli, err := c.etcdClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return read(ctx, cli)
}

// leader returns the elected master's process (nil if none or unknown).
func (c *Cluster) leader(ctx context.Context) *proc {
	var addr string
	err := c.withEtcd(ctx, func(ctx context.Context, cli meta.Store) (err error) {
		addr, err = meta.LeaderAddress(ctx, cli, meta.NewLayout(clusterName))
		return err
	})
	if err != nil {
		return nil
	}
	for _, m := range c.masters {
		if m.addr == addr {
			return m
		}
	}
	return nil
}

// waitLeader waits until m is the elected master.
func (c *Cluster) waitLeader(ctx context.Context, m *proc) error {
	deadline := time.Now().Add(c.o.ReadyTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if c.leader(ctx) == m {
			return nil
		}
		if !m.running() {
			return fmt.Errorf("verify: %s exited while waiting for it to lead; see %s:\n%s", m.name, m.log, m.tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("verify: %s did not become the leader within %v", m.name, c.o.ReadyTimeout)
}

// WaitServers waits until the masters list every tablet server.
func (c *Cluster) WaitServers(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, c.o.ReadyTimeout)
	defer cancel()
	cl, err := c.NewClient(cctx)
	if err != nil {
		return fmt.Errorf("verify: connecting to the masters: %w", err)
	}
	defer cl.Close()
	var want []string
	for _, s := range c.servers {
		want = append(want, s.name)
	}
	var got []string
	for cctx.Err() == nil {
		actx, acancel := context.WithTimeout(cctx, 5*time.Second)
		ss, err := cl.Admin().Servers(actx)
		acancel()
		if err == nil {
			got = got[:0]
			for _, s := range ss {
				got = append(got, s.ID)
			}
			slices.Sort(got)
			if slices.Equal(got, want) {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("verify: tablet servers %v registered after %v, want %v", got, c.o.ReadyTimeout, want)
}

// restart starts an exited process again and waits until it listens.
func (c *Cluster) restart(ctx context.Context, p *proc) error {
	if p == c.etcd {
		return c.startEtcd(ctx)
	}
	if err := p.start(); err != nil {
		return err
	}
	return p.waitListening(c.o.ReadyTimeout)
}

// EnsureRunning restarts the object store if it was killed, every process
// that is not running, and resumes every paused one.
func (c *Cluster) EnsureRunning(ctx context.Context) error {
	var errs []error
	if c.store.down {
		errs = append(errs, c.restartStore(ctx))
	}
	for _, p := range c.all() {
		p.mu.Lock()
		paused := p.paused
		p.mu.Unlock()
		if paused && p.running() {
			p.signal(syscall.SIGCONT)
		}
		if !p.running() {
			errs = append(errs, c.restart(ctx, p))
		}
	}
	return errors.Join(errs...)
}

// Crashes returns the crash reports found in the processes' logs.
func (c *Cluster) Crashes() []string {
	var out []string
	for _, p := range c.all() {
		if p != nil {
			out = append(out, p.crashes()...)
		}
	}
	return out
}

// Close stops every process: tablet servers, masters, etcd, then the
// object store, which the others may still write to as they stop.
func (c *Cluster) Close() error {
	var errs []error
	for _, group := range [][]*proc{c.servers, c.masters, {c.etcd}} {
		for _, p := range group {
			if p != nil {
				errs = append(errs, p.terminate(20*time.Second))
			}
		}
	}
	c.closeObjectStore()
	if c.net != nil {
		errs = append(errs, c.net.Close())
	}
	return errors.Join(errs...)
}

// describeProcs is a one-line summary of the processes' restarts.
func (c *Cluster) describeProcs() string {
	var parts []string
	for _, p := range c.all() {
		p.mu.Lock()
		parts = append(parts, p.name+"×"+strconv.Itoa(p.starts))
		p.mu.Unlock()
	}
	return strings.Join(parts, " ")
}
