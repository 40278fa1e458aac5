package s3fs

import (
	"bytes"
	"io/fs"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7/pkg/credentials"
)

// fakeFile is the credentials file of the unit tests: its contents and
// modification time are set by hand, and so is the clock, so that nothing
// depends on how fast the test runs.
type fakeFile struct {
	data         []byte
	mod          time.Time
	missing      bool
	stats, reads int
	now          time.Time
}

type fakeInfo struct {
	fs.FileInfo
	f *fakeFile
}

func (i fakeInfo) ModTime() time.Time { return i.f.mod }
func (i fakeInfo) Size() int64        { return int64(len(i.f.data)) }

// write replaces the contents, one second later than the last version.
func (f *fakeFile) write(s string) {
	f.data, f.mod, f.missing = []byte(s), f.mod.Add(time.Second), false
}

func (f *fakeFile) provider(profile string, log *bytes.Buffer) *fileCreds {
	p := newFileCreds("/etc/tabula/aws-credentials", profile, slog.New(slog.NewTextHandler(log, nil)))
	p.now = func() time.Time { return f.now }
	p.stat = func(string) (fs.FileInfo, error) {
		f.stats++
		if f.missing {
			return nil, fs.ErrNotExist
		}
		return fakeInfo{f: f}, nil
	}
	p.readFile = func(string) ([]byte, error) {
		f.reads++
		if f.missing {
			return nil, fs.ErrNotExist
		}
		return f.data, nil
	}
	return p
}

func keys(id, secret, token string) string {
	return "[default]\naws_access_key_id = " + id + "\naws_secret_access_key = " + secret + "\naws_session_token = " + token + "\n"
}

// get does what minio-go does before each request: IsExpired, then Get.
func get(t *testing.T, c *credentials.Credentials) credentials.Value {
	t.Helper()
	c.IsExpired()
	v, err := c.GetWithContext(nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFileCredentialsReread: the file is read once, looked at no more than
// once a second, re-read when it changed, and a version that cannot be
// read or parsed keeps the last good keys (logged once) until the next
// version, which is read.
func TestFileCredentialsReread(t *testing.T) {
	f := &fakeFile{now: time.Unix(1000, 0)}
	f.write(keys("A", "sa", "ta"))
	var log bytes.Buffer
	p := f.provider("default", &log)
	c := credentials.New(labelled{p, p.where()})
	if v := get(t, c); v.AccessKeyID != "A" || v.SecretAccessKey != "sa" || v.SessionToken != "ta" {
		t.Fatalf("first read: %+v", v)
	}
	// Within the second: no stat, the rotation is not seen yet.
	f.write(keys("B", "sb", "tb"))
	stats := f.stats
	for range 100 {
		if v := get(t, c); v.AccessKeyID != "A" {
			t.Fatalf("within a second of the last check: %+v", v)
		}
	}
	if f.stats != stats {
		t.Fatalf("%d stats within one second; want none", f.stats-stats)
	}
	f.now = f.now.Add(time.Second)
	if v := get(t, c); v.AccessKeyID != "B" || v.SessionToken != "tb" {
		t.Fatalf("after the file changed: %+v", v)
	}
	// Unchanged: looked at, not read.
	reads := f.reads
	f.now = f.now.Add(time.Second)
	if v := get(t, c); v.AccessKeyID != "B" || f.reads != reads {
		t.Fatalf("unchanged file: %+v, %d reads", v, f.reads-reads)
	}

	// Caught half-written, then missing: the last good keys stay.
	for _, bad := range []func(){
		func() { f.write("[default]\naws_access_key_id = C\n") },
		func() { f.write("[defa") },
		func() { f.missing = true },
	} {
		bad()
		f.now = f.now.Add(time.Second)
		if v := get(t, c); v.AccessKeyID != "B" || v.SecretAccessKey != "sb" {
			t.Fatalf("a bad version replaced the keys: %+v", v)
		}
	}
	// A bad version is not read again until it changes.
	f.write("garbage without equals")
	f.now = f.now.Add(time.Second)
	get(t, c)
	reads = f.reads
	for range 3 {
		f.now = f.now.Add(time.Second)
		get(t, c)
	}
	if f.reads != reads {
		t.Fatalf("an unchanged bad version was read %d more times", f.reads-reads)
	}
	if n := strings.Count(log.String(), "keeping the last good credentials"); n != 4 {
		t.Fatalf("%d warnings for 4 distinct problems:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "/etc/tabula/aws-credentials") {
		t.Fatalf("the warning does not name the file:\n%s", log.String())
	}

	f.write(keys("D", "sd", ""))
	f.now = f.now.Add(time.Second)
	if v := get(t, c); v.AccessKeyID != "D" || v.SessionToken != "" {
		t.Fatalf("after the file was fixed: %+v", v)
	}
	if !strings.Contains(log.String(), "readable again") {
		t.Fatalf("no note that the file works again:\n%s", log.String())
	}
}

// TestFileCredentialsProfiles: the profile asked for is the one read; a
// missing file or profile, never read successfully, is an error that
// names the file and the profile.
func TestFileCredentialsProfiles(t *testing.T) {
	f := &fakeFile{now: time.Unix(1000, 0)}
	f.write("# rotated by the agent\n[default]\naws_access_key_id=DEF\naws_secret_access_key=sdef\n\n" +
		"; another\n[ batch ]\n  aws_access_key_id =  BATCH \nAWS_SECRET_ACCESS_KEY= sbatch\naws_session_token=tok=en\nregion = eu-1\n")
	var log bytes.Buffer
	for profile, want := range map[string]credentials.Value{
		"default": {AccessKeyID: "DEF", SecretAccessKey: "sdef"},
		"batch":   {AccessKeyID: "BATCH", SecretAccessKey: "sbatch", SessionToken: "tok=en"},
	} {
		p := f.provider(profile, &log)
		v, err := credentials.New(labelled{p, p.where()}).GetWithContext(nil)
		if err != nil || v.AccessKeyID != want.AccessKeyID || v.SecretAccessKey != want.SecretAccessKey || v.SessionToken != want.SessionToken {
			t.Errorf("profile %s: %+v, %v; want %+v", profile, v, err, want)
		}
	}
	for _, c := range []struct{ profile, data, want string }{
		{"nope", string(f.data), "no profile [nope]"},
		{"default", "[default]\naws_access_key_id = X\n", "needs both"},
		{"default", "", "no profile [default]"},
	} {
		g := &fakeFile{now: f.now}
		g.write(c.data)
		p := g.provider(c.profile, &log)
		_, err := credentials.New(labelled{p, p.where()}).GetWithContext(nil)
		if err == nil || !strings.Contains(err.Error(), c.want) ||
			!strings.Contains(err.Error(), "AWS_SHARED_CREDENTIALS_FILE=/etc/tabula/aws-credentials profile "+c.profile) {
			t.Errorf("profile %s of %q: %v; want an error naming the file, the profile and %q", c.profile, c.data, err, c.want)
		}
	}
	g := &fakeFile{missing: true}
	p := g.provider("default", &log)
	if _, err := credentials.New(labelled{p, p.where()}).GetWithContext(nil); err == nil ||
		!strings.Contains(err.Error(), "/etc/tabula/aws-credentials profile default") {
		t.Errorf("a missing file: %v", err)
	}
}
