package tlsconf

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// reloadInterval bounds how often a keyPair looks at its files: two stats
// a second cost nothing, two stats on every handshake would add up on a
// busy port, and nobody needs a rotation to be seen sooner.
const reloadInterval = time.Second

// keyPair serves a certificate and its key from two files and reads them
// again when either file's modification time or size changed. A reload
// that fails (a rotation caught between writing the certificate and the
// key, say) keeps the last good pair and is tried again at the next check.
type keyPair struct {
	certPath, keyPath string
	now               func() time.Time

	// cert is what handshakes read; it never waits for the files.
	cert atomic.Pointer[tls.Certificate]

	// mu protects the fields below, which only the goroutine checking the
	// files uses.
	mu       sync.Mutex
	checked  time.Time // when the files were last looked at
	certStat fileStamp // the files as they were when cert was loaded
	keyStat  fileStamp
}

// fileStamp is what tells that a file changed.
type fileStamp struct {
	mtime int64 // nanoseconds since the epoch; comparable with ==, unlike time.Time
	size  int64
}

func stamp(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.ModTime().UnixNano(), fi.Size()}, nil
}

// newKeyPair loads the pair; failing here is an error, unlike a failed
// reload later.
func newKeyPair(certPath, keyPath string, now func() time.Time) (*keyPair, error) {
	k := &keyPair{certPath: certPath, keyPath: keyPath, now: now}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.checked = now()
	if err := k.loadLocked(); err != nil {
		return nil, err
	}
	return k, nil
}

// get returns the current certificate, first reloading it if a check is
// due and the files changed.
func (k *keyPair) get() *tls.Certificate {
	// Handshakes that find another one checking the files go on with the
	// current certificate rather than queue behind its disk reads.
	if k.mu.TryLock() {
		if now := k.now(); now.Sub(k.checked) >= reloadInterval {
			k.checked = now
			_ = k.loadLocked() // a failed reload keeps the last good pair
		}
		k.mu.Unlock()
	}
	return k.cert.Load()
}

// loadLocked reads the files if they changed since the last load. The
// stamps are taken before reading, so a write that lands during the read
// changes them again and is picked up at the next check.
func (k *keyPair) loadLocked() error {
	cs, err := stamp(k.certPath)
	if err != nil {
		return fmt.Errorf("tlsconf: reading certificate %s: %w", k.certPath, err)
	}
	ks, err := stamp(k.keyPath)
	if err != nil {
		return fmt.Errorf("tlsconf: reading key %s: %w", k.keyPath, err)
	}
	if k.cert.Load() != nil && cs == k.certStat && ks == k.keyStat {
		return nil
	}
	certPEM, err := os.ReadFile(k.certPath)
	if err != nil {
		return fmt.Errorf("tlsconf: reading certificate %s: %w", k.certPath, err)
	}
	keyPEM, err := os.ReadFile(k.keyPath)
	if err != nil {
		return fmt.Errorf("tlsconf: reading key %s: %w", k.keyPath, err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("tlsconf: loading certificate %s with key %s: %w", k.certPath, k.keyPath, err)
	}
	k.cert.Store(&c)
	k.certStat, k.keyStat = cs, ks
	return nil
}
