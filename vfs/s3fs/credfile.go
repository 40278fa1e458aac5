package s3fs

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7/pkg/credentials"
)

// recheck is how often the credentials file is looked at (a stat): often
// enough that a rotation is picked up before the old session token runs
// out, rarely enough to cost nothing next to the requests it signs.
const recheck = time.Second

// fileCreds is a credentials.Provider on one profile of a shared
// credentials file, which it re-reads when the file's modification time or
// size changed, so that an agent rotating short-lived keys by rewriting the
// file needs no restart. minio-go's FileAWSCredentials is not used: it
// re-parses the file on every request (it never sets an expiry for static
// keys), and a file caught half-written fails that request instead of
// keeping the last good keys; it also runs credential_process and SSO,
// which Tabula does not want behind a storage URL.
type fileCreds struct {
	path, profile string
	now           func() time.Time
	stat          func(string) (fs.FileInfo, error)
	readFile      func(string) ([]byte, error)
	log           *slog.Logger

	mu      sync.Mutex
	val     credentials.Value
	good    bool      // val was read from the file
	checked time.Time // last stat
	seen    stamp     // the version of the file last read, good or not
	stale   bool      // the file changed since it was read
	lastErr string    // last problem logged, so it is logged once
}

// stamp tells versions of a file apart.
type stamp struct {
	mod  time.Time
	size int64
}

func newFileCreds(path, profile string, log *slog.Logger) *fileCreds {
	if log == nil {
		log = slog.Default()
	}
	return &fileCreds{path: path, profile: profile, now: time.Now, stat: os.Stat, readFile: os.ReadFile, log: log}
}

func (p *fileCreds) where() string {
	return fmt.Sprintf("AWS_SHARED_CREDENTIALS_FILE=%s profile %s", p.path, p.profile)
}

// IsExpired says whether the file changed since it was read, looking at
// most once per recheck. Credentials calls it before every request.
func (p *fileCreds) IsExpired() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.good || p.stale {
		return true
	}
	now := p.now()
	if now.Sub(p.checked) < recheck {
		return false
	}
	p.checked = now
	info, err := p.stat(p.path)
	if err != nil {
		p.problem(err)
		return false
	}
	p.stale = stamp{info.ModTime(), info.Size()} != p.seen
	return p.stale
}

func (p *fileCreds) Retrieve() (credentials.Value, error) { return p.RetrieveWithCredContext(nil) }

// RetrieveWithCredContext reads the file. Once it has worked, a file that
// cannot be read or parsed (missing for a moment, caught half-written)
// keeps the last good credentials: the store, not a rotation in progress,
// decides whether they are still accepted.
func (p *fileCreds) RetrieveWithCredContext(*credentials.CredContext) (credentials.Value, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checked, p.stale = p.now(), false
	v, st, err := p.read()
	if st != (stamp{}) {
		p.seen = st // a bad version is not read again until it changes
	}
	if err != nil {
		if p.good {
			p.problem(err)
			return p.val, nil
		}
		return credentials.Value{}, err
	}
	if p.lastErr != "" {
		p.log.Info("s3fs: credentials file readable again", "file", p.path, "profile", p.profile)
		p.lastErr = ""
	}
	p.val, p.good = v, true
	return v, nil
}

// read stats, then reads: a write after the stat changes the stamp, so it
// is read again at the next check.
func (p *fileCreds) read() (credentials.Value, stamp, error) {
	info, err := p.stat(p.path)
	if err != nil {
		return credentials.Value{}, stamp{}, err
	}
	st := stamp{info.ModTime(), info.Size()}
	data, err := p.readFile(p.path)
	if err != nil {
		return credentials.Value{}, st, err
	}
	v, err := parseProfile(data, p.profile)
	return v, st, err
}

// problem logs a failure to re-read the file, once until it changes.
func (p *fileCreds) problem(err error) {
	if msg := err.Error(); msg != p.lastErr {
		p.lastErr = msg
		p.log.Warn("s3fs: credentials file unusable; keeping the last good credentials",
			"file", p.path, "profile", p.profile, "err", err)
	}
}

// parseProfile reads aws_access_key_id, aws_secret_access_key and
// aws_session_token from section [profile] of an AWS shared credentials
// file (INI: "[name]" headers, "key = value" lines, '#' or ';' comments).
func parseProfile(data []byte, profile string) (credentials.Value, error) {
	var v credentials.Value
	found, in := false, false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") {
				return v, fmt.Errorf("line %d: unterminated section header", n)
			}
			in = strings.TrimSpace(line[1:len(line)-1]) == profile
			found = found || in
		default:
			k, val, ok := strings.Cut(line, "=")
			if !ok {
				return v, fmt.Errorf("line %d: want key = value", n)
			}
			if !in {
				continue
			}
			switch val = strings.TrimSpace(val); strings.ToLower(strings.TrimSpace(k)) {
			case "aws_access_key_id":
				v.AccessKeyID = val
			case "aws_secret_access_key":
				v.SecretAccessKey = val
			case "aws_session_token":
				v.SessionToken = val
			}
		}
	}
	if err := sc.Err(); err != nil {
		return v, err
	}
	if !found {
		return v, fmt.Errorf("no profile [%s]", profile)
	}
	if v.AccessKeyID == "" || v.SecretAccessKey == "" {
		return v, fmt.Errorf("profile [%s] needs both aws_access_key_id and aws_secret_access_key", profile)
	}
	v.SignerType = credentials.SignatureV4
	return v, nil
}
