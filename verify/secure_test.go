package verify

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/internal/embedetcd"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/tlsconf"
)

// testCluster is a Cluster with its options and security but no
// processes.
func testCluster(t *testing.T, secure bool) *Cluster {
	t.Helper()
	o, err := ClusterOptions{Dir: t.TempDir(), Binary: "tabula", Secure: secure}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{o: o}
	if c.sec, err = newSecurity(o); err != nil {
		t.Fatal(err)
	}
	return c
}

// flagValue returns the value following flag in args ("" and false if
// absent).
func flagValue(args []string, flag string) (string, bool) {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		return "", false
	}
	return args[i+1], true
}

// procs prepares one process of each kind.
func procs(t *testing.T, c *Cluster) map[string]*proc {
	t.Helper()
	var err error
	if c.etcd, err = c.etcdProc(); err != nil {
		t.Fatal(err)
	}
	m, err := c.masterProc(0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.serverProc(0)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*proc{"etcd": c.etcd, "master": m, "tabletserver": s}
}

func TestSecureClusterPassesTLSAndAuthToEveryProcess(t *testing.T) {
	c := testCluster(t, true)
	pki := c.sec.pki
	want := map[string]struct {
		tls, etcd tlsconf.Files // etcd: zero for etcd itself
		auth      bool
	}{
		"etcd":         {tls: pki.Etcd},
		"master":       {tls: pki.Master, etcd: pki.Master, auth: true},
		"tabletserver": {tls: pki.TabletServer, etcd: pki.TabletServer, auth: true},
	}
	for kind, p := range procs(t, c) {
		w := want[kind]
		if p.args[0] != kind {
			t.Errorf("%s runs %q", kind, p.args)
		}
		for _, f := range []struct{ flag, want string }{
			{"--tls-ca", w.tls.CA}, {"--tls-cert", w.tls.Cert}, {"--tls-key", w.tls.Key},
			{"--etcd-ca", w.etcd.CA}, {"--etcd-cert", w.etcd.Cert}, {"--etcd-key", w.etcd.Key},
		} {
			if got, _ := flagValue(p.args, f.flag); got != f.want {
				t.Errorf("%s: %s = %q, want %q (args %q)", kind, f.flag, got, f.want, p.args)
			}
		}
		if got := slices.Contains(p.args, "--auth"); got != w.auth {
			t.Errorf("%s: --auth is there: %v, want %v (args %q)", kind, got, w.auth, p.args)
		}
	}
	for _, f := range []tlsconf.Files{pki.Etcd, pki.Master, pki.TabletServer} {
		for _, path := range []string{f.CA, f.Cert, f.Key} {
			if _, err := os.Stat(path); err != nil {
				t.Errorf("the dev PKI lacks a file: %v", err)
			}
		}
	}
}

func TestPlaintextClusterPassesNoSecurityFlags(t *testing.T) {
	c := testCluster(t, false)
	for kind, p := range procs(t, c) {
		for _, a := range p.args {
			if strings.HasPrefix(a, "--tls-") || strings.HasPrefix(a, "--etcd-") || a == "--auth" {
				t.Errorf("%s: plaintext cluster passes %s (args %q)", kind, a, p.args)
			}
		}
		if got, _ := flagValue(p.args, p.args[len(p.args)-2]); got != p.addr {
			t.Errorf("%s listens on %s, want %s", kind, got, p.addr)
		}
	}
	if c.AdminTokenFile() != "" || c.CA() != "" {
		t.Errorf("plaintext cluster has a token file %q or CA %q", c.AdminTokenFile(), c.CA())
	}
}

// The bootstrap reaches etcd as `tabula etcd --tls-*` serves it (TLS,
// client certificate required), and leaves a grant and a token behind.
func TestBootstrapAdminOverTLS(t *testing.T) {
	c := testCluster(t, true)
	ctx := context.Background()
	srv, err := embedetcd.Start(ctx, embedetcd.Config{Dir: t.TempDir(), NoFsync: true, TLS: c.sec.pki.Etcd})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c.etcd = &proc{name: "etcd", addr: srv.Endpoints()[0]}
	if err := c.bootstrapAdmin(ctx); err != nil {
		t.Fatal(err)
	}

	b, err := os.ReadFile(c.AdminTokenFile())
	if err != nil || strings.TrimSpace(string(b)) != c.sec.token {
		t.Fatalf("token file holds %q (%v), want the token %q", b, err, c.sec.token)
	}
	if st, _ := os.Stat(c.AdminTokenFile()); st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", st.Mode().Perm())
	}
	cli, err := c.etcdClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	l := meta.NewLayout(clusterName)
	grants, err := auth.ListGrants(ctx, cli, l, tlsconf.AdminName, "")
	want := []auth.Grant{{Principal: tlsconf.AdminName, Table: auth.AllTables, Role: auth.Admin}}
	if err != nil || !slices.Equal(grants, want) {
		t.Errorf("grants %v (%v), want %v", grants, err, want)
	}
	toks, err := auth.ListTokens(ctx, cli, l, tlsconf.AdminName)
	if err != nil || len(toks) != 1 || !strings.HasPrefix(c.sec.token, "tabula_"+toks[0].ID+"_") {
		t.Errorf("tokens %v (%v), want one, the bootstrapped %s", toks, err, c.sec.token)
	}

	// The same cluster without its security cannot reach etcd: the TLS
	// above was needed, not merely tolerated.
	plain := *c
	plain.sec = security{}
	pcli, err := plain.etcdClient()
	if err != nil {
		t.Fatal(err)
	}
	defer pcli.Close()
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := pcli.Get(tctx, "k"); err == nil {
		t.Error("a plaintext etcd client read from the TLS etcd")
	}
}
