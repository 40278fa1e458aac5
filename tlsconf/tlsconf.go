package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"
)

// Files names the PEM files one process uses.
type Files struct {
	CA   string // CA bundle that verifies the peer (servers: client certs; clients: the server)
	Cert string // this process's certificate chain
	Key  string // its private key
}

// Enabled reports whether any of the files is set: a process whose Files
// are all empty runs without TLS.
func (f Files) Enabled() bool { return f.CA != "" || f.Cert != "" || f.Key != "" }

// Check reports what is missing for role "server" or "client". A server
// needs all three files: it presents a certificate and verifies the
// certificates clients give. A client needs the CA to verify the server,
// and a certificate and key together or not at all (without one it
// authenticates some other way, a token say). The errors name the Files
// field; which flag or setting fills it is the caller's to say.
func (f Files) Check(role string) error {
	var errs []error
	switch role {
	case "server":
		if f.CA == "" {
			errs = append(errs, errors.New("tlsconf: a server needs a CA bundle (CA) to verify client certificates"))
		}
		if f.Cert == "" {
			errs = append(errs, errors.New("tlsconf: a server needs a certificate (Cert)"))
		}
		if f.Key == "" {
			errs = append(errs, errors.New("tlsconf: a server needs the certificate's private key (Key)"))
		}
	case "client":
		if f.CA == "" {
			errs = append(errs, errors.New("tlsconf: a client needs a CA bundle (CA) to verify the server"))
		}
		if f.Cert != "" && f.Key == "" {
			errs = append(errs, errors.New("tlsconf: a client certificate (Cert) needs its private key (Key)"))
		}
		if f.Key != "" && f.Cert == "" {
			errs = append(errs, errors.New("tlsconf: a client private key (Key) needs its certificate (Cert)"))
		}
	default:
		errs = append(errs, fmt.Errorf("tlsconf: unknown role %q (want server or client)", role))
	}
	return errors.Join(errs...)
}

// ServerConfig returns a TLS 1.2+ server configuration that presents
// f.Cert and f.Key, reloaded when their files change, and verifies client
// certificates against f.CA when clients give one
// (tls.VerifyClientCertIfGiven): components present certificates, users
// may authenticate with tokens instead, so whoever needs a certificate
// checks PeerName. f.CA is read once.
func ServerConfig(f Files) (*tls.Config, error) { return serverConfig(f, time.Now) }

func serverConfig(f Files, now func() time.Time) (*tls.Config, error) {
	if err := f.Check("server"); err != nil {
		return nil, err
	}
	pool, err := loadCA(f.CA)
	if err != nil {
		return nil, err
	}
	kp, err := newKeyPair(f.Cert, f.Key, now)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.get(), nil },
		ClientCAs:      pool,
		ClientAuth:     tls.VerifyClientCertIfGiven,
	}, nil
}

// ClientConfig returns a TLS 1.2+ client configuration that verifies the
// server against f.CA and, when f.Cert is set, presents f.Cert and f.Key
// as its client certificate, reloaded when their files change. f.CA is
// read once. The server name to verify is left to the dialer (gRPC takes
// it from the target address).
func ClientConfig(f Files) (*tls.Config, error) { return clientConfig(f, time.Now) }

func clientConfig(f Files, now func() time.Time) (*tls.Config, error) {
	if err := f.Check("client"); err != nil {
		return nil, err
	}
	pool, err := loadCA(f.CA)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	if f.Cert != "" {
		kp, err := newKeyPair(f.Cert, f.Key, now)
		if err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get(), nil }
	}
	return cfg, nil
}

// loadCA reads a PEM bundle of CA certificates.
func loadCA(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: reading CA bundle %s: %w", path, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("tlsconf: CA bundle %s holds no PEM certificate", path)
	}
	return pool, nil
}

// PeerName returns the common name of the verified client certificate of
// a TLS connection state, and false if there is none: no TLS, no
// certificate, a certificate that was not verified, or an empty common
// name. Only verified chains count, so the name can be trusted as far as
// the CA is.
func PeerName(cs tls.ConnectionState) (string, bool) {
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return "", false
	}
	cn := cs.VerifiedChains[0][0].Subject.CommonName
	return cn, cn != ""
}
