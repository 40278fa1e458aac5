package verify

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/tlsconf"
)

// security is what ClusterOptions.Secure adds to a cluster: a dev PKI in
// Dir/tls, the TLS configurations of this package's own connections and
// the admin's token. Its zero value is a plaintext cluster.
type security struct {
	pki tlsconf.DevPKI
	// etcd presents the master's certificate: etcd over TLS wants a client
	// certificate, and the master's is the one that may write everything.
	etcd *tls.Config
	// client only trusts the CA: the workload and checker authenticate
	// with the token, as a user of the cluster would.
	client *tls.Config
	token  string
}

func newSecurity(o ClusterOptions) (security, error) {
	var s security
	if !o.Secure {
		return s, nil
	}
	var err error
	if s.pki, err = tlsconf.GenerateDev(filepath.Join(o.Dir, "tls")); err != nil {
		return s, fmt.Errorf("verify: making the dev CA: %w", err)
	}
	if s.etcd, err = tlsconf.ClientConfig(s.pki.Master); err != nil {
		return s, fmt.Errorf("verify: %w", err)
	}
	if s.client, err = tlsconf.ClientConfig(tlsconf.Files{CA: s.pki.CA}); err != nil {
		return s, fmt.Errorf("verify: %w", err)
	}
	return s, nil
}

func (s security) on() bool { return s.client != nil }

// tlsArgs are the --tls-* flags serving with f (none on a plaintext
// cluster).
func (s security) tlsArgs(f tlsconf.Files) []string {
	if !s.on() {
		return nil
	}
	return []string{"--tls-ca", f.CA, "--tls-cert", f.Cert, "--tls-key", f.Key}
}

// serverArgs are a master's or tablet server's security flags: it serves
// and dials with f, reaches etcd with f, and requires credentials.
func (s security) serverArgs(f tlsconf.Files) []string {
	if !s.on() {
		return nil
	}
	return append(s.tlsArgs(f), "--etcd-ca", f.CA, "--etcd-cert", f.Cert, "--etcd-key", f.Key, "--auth")
}

// bootstrapAdmin gives tlsconf.AdminName the admin role on every table and
// a token, written straight to etcd before any master starts (as `tabula
// auth bootstrap` does), and keeps the token in Dir/admin.token (0600) for
// whoever looks into a kept cluster.
func (c *Cluster) bootstrapAdmin(ctx context.Context) error {
	if !c.sec.on() {
		return nil
	}
	cli, err := c.etcdClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l := meta.NewLayout(clusterName)
	g := auth.Grant{Principal: tlsconf.AdminName, Table: auth.AllTables, Role: auth.Admin}
	if err := auth.SetGrant(ctx, cli, l, g); err != nil {
		return fmt.Errorf("verify: granting %s the admin role: %w", g.Principal, err)
	}
	tok, _, err := auth.CreateToken(ctx, cli, l, g.Principal, "verify admin", time.Now())
	if err != nil {
		return fmt.Errorf("verify: creating the admin token: %w", err)
	}
	c.sec.token = tok
	f := c.AdminTokenFile()
	if err := os.WriteFile(f, []byte(tok+"\n"), 0o600); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	c.o.Logf("TLS and auth on: CA %s, admin token in %s", c.sec.pki.CA, f)
	return nil
}

// AdminTokenFile returns the file holding the admin token of a Secure
// cluster ("" for a plaintext one): pass it with the CA as --token and
// --tls-ca to reach the cluster with the tabula CLI.
func (c *Cluster) AdminTokenFile() string {
	if !c.sec.on() {
		return ""
	}
	return filepath.Join(c.o.Dir, "admin.token")
}

// CA returns the CA certificate file of a Secure cluster ("" for a
// plaintext one).
func (c *Cluster) CA() string { return c.sec.pki.CA }

// NewClient connects to the masters; on a Secure cluster over TLS, as the
// bootstrapped admin.
func (c *Cluster) NewClient(ctx context.Context) (*client.Client, error) {
	return client.NewClientWithOptions(ctx, client.Options{Masters: c.MasterAddrs(), TLS: c.sec.client, Token: c.sec.token})
}
