package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

func TestMutualTLSNamesTheClient(t *testing.T) {
	p := devPKI(t)
	r := handshake(t, mustServer(t, p.Master), mustClient(t, p.Admin))
	if r.serverErr != nil || r.clientErr != nil {
		t.Fatalf("server: %v, client: %v", r.serverErr, r.clientErr)
	}
	if name, ok := PeerName(r.server); name != AdminName || !ok {
		t.Errorf("PeerName = %q, %v; want %q, true", name, ok, AdminName)
	}
	if got := r.client.PeerCertificates[0].Subject.CommonName; got != MasterName {
		t.Errorf("client saw server %q, want %q", got, MasterName)
	}
	if r.server.Version < tls.VersionTLS12 {
		t.Errorf("negotiated version %x, below TLS 1.2", r.server.Version)
	}
}

func TestClientWithoutCertificateConnectsUnnamed(t *testing.T) {
	p := devPKI(t)
	r := handshake(t, mustServer(t, p.Master), mustClient(t, Files{CA: p.CA}))
	if r.serverErr != nil || r.clientErr != nil {
		t.Fatalf("server: %v, client: %v", r.serverErr, r.clientErr)
	}
	if name, ok := PeerName(r.server); ok {
		t.Errorf("PeerName = %q, true; want false for a client without a certificate", name)
	}
}

func TestClientCertificateFromAnotherCAIsRejected(t *testing.T) {
	p, other := devPKI(t), devPKI(t)
	// The client trusts the server, but its own certificate is signed by
	// a CA the server does not know.
	cli := mustClient(t, Files{CA: p.CA, Cert: other.Admin.Cert, Key: other.Admin.Key})
	r := handshake(t, mustServer(t, p.Master), cli)
	if r.serverErr == nil || r.clientErr == nil {
		t.Fatalf("server: %v, client: %v; want both to fail", r.serverErr, r.clientErr)
	}
	if name, ok := PeerName(r.server); ok {
		t.Errorf("PeerName = %q, true after a rejected certificate", name)
	}
}

func TestServerFromAnotherCAIsRejected(t *testing.T) {
	p, other := devPKI(t), devPKI(t)
	r := handshake(t, mustServer(t, other.Master), mustClient(t, p.Admin))
	var unknown x509.UnknownAuthorityError
	if !errors.As(r.clientErr, &unknown) {
		t.Fatalf("client: %v; want an unknown-authority error", r.clientErr)
	}
}

func TestPeerNameWithoutTLS(t *testing.T) {
	if name, ok := PeerName(tls.ConnectionState{}); ok || name != "" {
		t.Errorf("PeerName of an empty state = %q, %v", name, ok)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		role  string
		files Files
		want  []string // substrings of the error; none means no error
	}{
		{"server", Files{CA: "ca", Cert: "c", Key: "k"}, nil},
		{"server", Files{}, []string{"server needs a CA bundle (CA)", "server needs a certificate (Cert)", "server needs the certificate's private key (Key)"}},
		{"server", Files{CA: "ca", Key: "k"}, []string{"tlsconf: a server needs a certificate (Cert)"}},
		{"server", Files{CA: "ca", Cert: "c"}, []string{"(Key)"}},
		{"server", Files{Cert: "c", Key: "k"}, []string{"(CA)"}},
		{"client", Files{CA: "ca"}, nil},
		{"client", Files{CA: "ca", Cert: "c", Key: "k"}, nil},
		{"client", Files{Cert: "c", Key: "k"}, []string{"tlsconf: a client needs a CA bundle (CA)"}},
		{"client", Files{CA: "ca", Cert: "c"}, []string{"client certificate (Cert) needs its private key (Key)"}},
		{"client", Files{CA: "ca", Key: "k"}, []string{"client private key (Key) needs its certificate (Cert)"}},
		{"peer", Files{CA: "ca", Cert: "c", Key: "k"}, []string{`unknown role "peer"`}},
	} {
		t.Run(fmt.Sprintf("%s/%+v", tc.role, tc.files), func(t *testing.T) {
			err := tc.files.Check(tc.role)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check = nil, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check = %q, want it to say %q", err, w)
				}
			}
		})
	}
}

func TestEnabled(t *testing.T) {
	if (Files{}).Enabled() {
		t.Error("empty Files enabled")
	}
	for _, f := range []Files{{CA: "x"}, {Cert: "x"}, {Key: "x"}} {
		if !f.Enabled() {
			t.Errorf("%+v not enabled", f)
		}
	}
}

func TestLoadErrorsNameThePath(t *testing.T) {
	p := devPKI(t)
	missing := filepath.Join(p.Dir, "missing.pem")
	for _, tc := range []struct {
		name  string
		build func() error
		want  string
		isNot bool // the error wraps fs.ErrNotExist
	}{
		{"server cert", func() error {
			_, err := ServerConfig(Files{CA: p.CA, Cert: missing, Key: p.Master.Key})
			return err
		}, "tlsconf: reading certificate " + missing + ": ", true},
		{"server key", func() error {
			_, err := ServerConfig(Files{CA: p.CA, Cert: p.Master.Cert, Key: missing})
			return err
		}, "tlsconf: reading key " + missing + ": ", true},
		{"server CA", func() error {
			_, err := ServerConfig(Files{CA: missing, Cert: p.Master.Cert, Key: p.Master.Key})
			return err
		}, "tlsconf: reading CA bundle " + missing + ": ", true},
		{"client cert", func() error {
			_, err := ClientConfig(Files{CA: p.CA, Cert: missing, Key: p.Admin.Key})
			return err
		}, "tlsconf: reading certificate " + missing + ": ", true},
		{"CA that is a key", func() error {
			_, err := ClientConfig(Files{CA: p.Admin.Key})
			return err
		}, "tlsconf: CA bundle " + p.Admin.Key + " holds no PEM certificate", false},
		{"key of another certificate", func() error {
			_, err := ServerConfig(Files{CA: p.CA, Cert: p.Master.Cert, Key: p.Admin.Key})
			return err
		}, "tlsconf: loading certificate " + p.Master.Cert + " with key " + p.Admin.Key, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.build()
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to start with %q", err, tc.want)
			}
			if tc.isNot && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("err = %v does not wrap fs.ErrNotExist", err)
			}
		})
	}
}

func ExampleFiles_Check() {
	f := Files{CA: "ca.pem", Cert: "admin.pem"}
	fmt.Println(f.Check("client"))
	// Output: tlsconf: a client certificate (Cert) needs its private key (Key)
}
