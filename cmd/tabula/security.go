package main

import (
	"crypto/tls"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/tabuladb/tabula/devcluster"
	"github.com/tabuladb/tabula/tlsconf"
)

// The security flags (docs/OPERATIONS.md "Security"). --tls-* are
// persistent: a client command uses them to reach the cluster, a master
// or tablet server as its own certificate, both for serving and for
// calling other components.
func addTLSFlags(c *cobra.Command) {
	pf := c.PersistentFlags()
	pf.String("tls-ca", "", "CA certificate (PEM) that verifies the other side; turns TLS on (env TABULA_TLS_CA)")
	pf.String("tls-cert", "", "this process's certificate (PEM): a server's identity, or a client certificate (env TABULA_TLS_CERT)")
	pf.String("tls-key", "", "the private key (PEM) of --tls-cert (env TABULA_TLS_KEY)")
	pf.String("token", "", "bearer token, as \"tabula auth token create\" prints it (env TABULA_TOKEN); needs --tls-ca")
}

// addEtcdTLSFlags adds the flags of TLS to etcd.
func addEtcdTLSFlags(c *cobra.Command) {
	f := c.Flags()
	f.String("etcd-ca", "", "CA certificate (PEM) of etcd's TLS port; turns TLS to etcd on")
	f.String("etcd-cert", "", "client certificate (PEM) presented to etcd")
	f.String("etcd-key", "", "private key (PEM) of --etcd-cert")
}

// addServerSecurityFlags adds what a master or tablet server needs beyond
// --tls-*: TLS to etcd, and authentication.
func addServerSecurityFlags(c *cobra.Command) {
	addEtcdTLSFlags(c)
	c.Flags().Bool("auth", false, "require every call to authenticate (token or client certificate) and check roles; needs --tls-*")
}

// etcdTLS returns the TLS configuration for etcd (nil: plaintext).
func etcdTLS(v *viper.Viper) (*tls.Config, error) {
	files := tlsconf.Files{CA: v.GetString("etcd-ca"), Cert: v.GetString("etcd-cert"), Key: v.GetString("etcd-key")}
	if !files.Enabled() {
		return nil, nil
	}
	if err := files.Check("client"); err != nil {
		return nil, fmt.Errorf("%w (flags --etcd-ca, --etcd-cert, --etcd-key)", err)
	}
	return tlsconf.ClientConfig(files)
}

func tlsFiles(v *viper.Viper) tlsconf.Files {
	return tlsconf.Files{CA: v.GetString("tls-ca"), Cert: v.GetString("tls-cert"), Key: v.GetString("tls-key")}
}

// clientSecurity returns the TLS configuration and token of a client
// command (nil and "" for a plaintext cluster).
func clientSecurity(v *viper.Viper) (*tls.Config, string, error) {
	files, token := tlsFiles(v), v.GetString("token")
	if !files.Enabled() {
		if token != "" {
			return nil, "", fmt.Errorf("--token needs TLS: pass --tls-ca (the cluster's CA certificate) too; tokens are never sent in plaintext")
		}
		return nil, "", nil
	}
	if err := files.Check("client"); err != nil {
		return nil, "", fmt.Errorf("%w (flags --tls-ca, --tls-cert, --tls-key)", err)
	}
	cfg, err := tlsconf.ClientConfig(files)
	return cfg, token, err
}

// serverSecurity is a master's or tablet server's: its TLS server and
// dial configurations from --tls-*, etcd's from --etcd-*, and --auth.
type serverSecurity struct {
	server, dial, etcd *tls.Config
	auth               bool
}

func readServerSecurity(v *viper.Viper) (serverSecurity, error) {
	var s serverSecurity
	s.auth = v.GetBool("auth")
	if files := tlsFiles(v); files.Enabled() {
		if err := files.Check("server"); err != nil {
			return s, fmt.Errorf("%w (flags --tls-ca, --tls-cert, --tls-key)", err)
		}
		var err error
		if s.server, err = tlsconf.ServerConfig(files); err != nil {
			return s, err
		}
		if s.dial, err = tlsconf.ClientConfig(files); err != nil {
			return s, err
		}
	} else if s.auth {
		return s, fmt.Errorf("--auth needs TLS: pass --tls-ca, --tls-cert and --tls-key (tokens are never accepted in plaintext)")
	}
	var err error
	s.etcd, err = etcdTLS(v)
	return s, err
}

// printDevSecurity tells the user of a secured dev cluster how to reach
// it: the CA to trust and, with auth, the admin token's file.
func printDevSecurity(w io.Writer, cl *devcluster.Cluster) {
	pki := cl.PKI()
	if pki.CA == "" {
		return
	}
	fmt.Fprintf(w, "TLS on: certificates in %s; clients trust it with: export TABULA_TLS_CA=%s\n", pki.Dir, pki.CA)
	if f := cl.AdminTokenFile(); f != "" {
		fmt.Fprintf(w, "auth on: the admin (%s) token is in %s; use it with: export TABULA_TOKEN=$(cat %s)\n", devcluster.AdminName, f, f)
	}
}
