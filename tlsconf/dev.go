package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The identities of the dev cluster; each is the common name of its
// certificate, which PeerName reports.
const (
	MasterName       = "tabula-master"
	TabletServerName = "tabula-tabletserver"
	EtcdName         = "tabula-etcd"
	AdminName        = "tabula-admin"
	// GatewayName is the Bigtable gateway's: the cluster lets a caller
	// with this certificate act for other principals (auth.GatewayName).
	GatewayName = "tabula-gateway"
)

// DevPKI is what GenerateDev writes into a directory.
type DevPKI struct {
	Dir string
	CA  string // ca.pem
	// One Files per identity, all signed by the CA, each certificate valid
	// for server and client authentication with the SANs 127.0.0.1, ::1
	// and localhost; CA is the ca.pem path in each.
	Master, TabletServer, Etcd, Admin, Gateway Files
}

const (
	caYears   = 10
	leafYears = 1
	// backdate covers clocks a little behind the one that signed.
	backdate = time.Hour
	// minRemaining is how long reused certificates must still be valid: a
	// dev cluster started today should not see them expire tomorrow.
	minRemaining = 24 * time.Hour
)

// GenerateDev creates a CA and certificates for MasterName,
// TabletServerName, EtcdName, AdminName and GatewayName in dir (created 0700; keys are
// 0600), as ca.pem, ca-key.pem, <name>.pem and <name>-key.pem. If all the
// files already exist, the CA still verifies every certificate, each key
// matches its certificate and all are valid for at least 24 more hours, it
// reuses them, so restarting the dev cluster keeps its certificates;
// otherwise it makes everything anew, CA included. The CA is for local
// use only: anyone who can read dir can sign certificates it trusts.
func GenerateDev(dir string) (DevPKI, error) { return generateDev(dir, time.Now()) }

func generateDev(dir string, now time.Time) (DevPKI, error) {
	p := devPaths(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return DevPKI{}, fmt.Errorf("tlsconf: creating %s: %w", dir, err)
	}
	if reusable(p, now) {
		return p, nil
	}
	if err := writeDev(p, now); err != nil {
		return DevPKI{}, err
	}
	return p, nil
}

// devPaths names the files of a dev PKI in dir.
func devPaths(dir string) DevPKI {
	ca := filepath.Join(dir, "ca.pem")
	files := func(name string) Files {
		return Files{CA: ca, Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")}
	}
	return DevPKI{
		Dir:          dir,
		CA:           ca,
		Master:       files(MasterName),
		TabletServer: files(TabletServerName),
		Etcd:         files(EtcdName),
		Admin:        files(AdminName),
		Gateway:      files(GatewayName),
	}
}

// identity is one certificate of a DevPKI: its common name and files.
type identity struct {
	name  string
	files Files
}

func (p DevPKI) identities() []identity {
	return []identity{{MasterName, p.Master}, {TabletServerName, p.TabletServer}, {EtcdName, p.Etcd}, {AdminName, p.Admin}, {GatewayName, p.Gateway}}
}

// reusable reports whether the files in p make a complete PKI that stays
// valid for minRemaining after now.
func reusable(p DevPKI, now time.Time) bool {
	caCert, err := readCert(p.CA)
	if err != nil || !caCert.IsCA || caCert.NotAfter.Before(now.Add(minRemaining)) {
		return false
	}
	if _, err := tls.LoadX509KeyPair(p.CA, caKeyPath(p)); err != nil {
		return false
	}
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	for _, id := range p.identities() {
		pair, err := tls.LoadX509KeyPair(id.files.Cert, id.files.Key)
		if err != nil {
			return false
		}
		leaf := pair.Leaf
		if leaf == nil { // only with GODEBUG=x509keypairleaf=0
			if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
				return false
			}
		}
		if leaf.Subject.CommonName != id.name || leaf.NotAfter.Before(now.Add(minRemaining)) {
			return false
		}
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			opts := x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}}
			if _, err := leaf.Verify(opts); err != nil {
				return false
			}
		}
	}
	return true
}

func caKeyPath(p DevPKI) string { return filepath.Join(p.Dir, "ca-key.pem") }

func readCert(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("tlsconf: %s holds no PEM certificate", path)
	}
	return x509.ParseCertificate(blk.Bytes)
}

// writeDev makes a new CA and a certificate per identity and writes them.
func writeDev(p DevPKI, now time.Time) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("tlsconf: generating the dev CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "tabula dev CA"},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.AddDate(caYears, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := sign(caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return fmt.Errorf("tlsconf: parsing the new dev CA: %w", err)
	}
	if err := writePEM(p.CA, "CERTIFICATE", caDER, 0o644); err != nil {
		return err
	}
	if err := writeKey(caKeyPath(p), caKey); err != nil {
		return err
	}
	for _, id := range p.identities() {
		if err := writeLeaf(id, caCert, caKey, now); err != nil {
			return err
		}
	}
	return nil
}

// writeLeaf makes and writes the certificate and key of id, signed by the
// CA.
func writeLeaf(id identity, caCert *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("tlsconf: generating a key for %s: %w", id.name, err)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: id.name},
		NotBefore:   now.Add(-backdate),
		NotAfter:    now.AddDate(leafYears, 0, 0),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := sign(tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writePEM(id.files.Cert, "CERTIFICATE", der, 0o644); err != nil {
		return err
	}
	return writeKey(id.files.Key, key)
}

// Issue signs a client certificate for principal name (its common name)
// with the dev CA, written as <name>.pem and <name>-key.pem in p.Dir (an
// existing pair is replaced): what a user of a dev cluster with auth
// presents to authenticate by certificate, natively or through the
// Bigtable gateway. Name must not be one of the dev cluster's own
// identities.
func (p DevPKI) Issue(name string) (Files, error) {
	if name == "" || filepath.Base(name) != name || name == "ca" {
		return Files{}, fmt.Errorf("tlsconf: %q cannot name a certificate file", name)
	}
	for _, id := range p.identities() {
		if id.name == name {
			return Files{}, fmt.Errorf("tlsconf: %s is one of the dev cluster's own identities", name)
		}
	}
	pair, err := tls.LoadX509KeyPair(p.CA, caKeyPath(p))
	if err != nil {
		return Files{}, fmt.Errorf("tlsconf: loading the dev CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return Files{}, fmt.Errorf("tlsconf: parsing the dev CA: %w", err)
	}
	caKey, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return Files{}, fmt.Errorf("tlsconf: the dev CA key is not an ECDSA key")
	}
	f := Files{CA: p.CA, Cert: filepath.Join(p.Dir, name+".pem"), Key: filepath.Join(p.Dir, name+"-key.pem")}
	if err := writeLeaf(identity{name: name, files: f}, caCert, caKey, time.Now()); err != nil {
		return Files{}, err
	}
	return f, nil
}

// sign fills in a random serial number and signs tmpl with parent's key.
func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, parentKey *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("tlsconf: drawing a serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, parentKey)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: signing the certificate for %q: %w", tmpl.Subject.CommonName, err)
	}
	return der, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("tlsconf: encoding key %s: %w", path, err)
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

// writePEM writes one PEM block to a temporary file and renames it over
// path, so a process reloading the file never reads half of it.
func writePEM(path, typ string, der []byte, perm os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("tlsconf: writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("tlsconf: writing %s: %w", path, err)
	}
	if err := pem.Encode(f, &pem.Block{Type: typ, Bytes: der}); err != nil {
		return fmt.Errorf("tlsconf: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("tlsconf: writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("tlsconf: writing %s: %w", path, err)
	}
	return nil
}
