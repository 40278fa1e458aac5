package s3fs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/internal/seaweed/seaweedtest"
)

// TestParseURLCredentials: each source's settings reach Config, and the
// first set of them is the one used, as the AWS tools order them.
func TestParseURLCredentials(t *testing.T) {
	parse := func(env map[string]string) (Config, error) {
		return ParseURL("s3://bkt?endpoint=http://127.0.0.1:1", func(k string) string { return env[k] })
	}
	c, err := parse(map[string]string{"AWS_SHARED_CREDENTIALS_FILE": "/run/creds", "AWS_PROFILE": "tabula"})
	if err != nil || c.CredentialsFile != "/run/creds" || c.Profile != "tabula" || c.AccessKey != "" {
		t.Fatalf("credentials file: %+v, %v", c, err)
	}
	if _, why := c.credentials(); !strings.Contains(why, "AWS_SHARED_CREDENTIALS_FILE=/run/creds profile tabula; rotate or fix") {
		t.Errorf("credentials file: a refusal would say %q", why)
	}
	c, _ = parse(map[string]string{"AWS_SHARED_CREDENTIALS_FILE": "/run/creds"})
	if _, why := c.credentials(); !strings.Contains(why, "profile default;") {
		t.Errorf("the default profile: a refusal would say %q", why)
	}
	c, _ = parse(map[string]string{"AWS_ACCESS_KEY_ID": "ak", "AWS_SECRET_ACCESS_KEY": "sk", "AWS_SHARED_CREDENTIALS_FILE": "/run/creds"})
	if _, why := c.credentials(); !strings.Contains(why, "AWS_ACCESS_KEY_ID") || !strings.Contains(why, "restart") {
		t.Errorf("keys in the environment come first: a refusal would say %q", why)
	}
	irsa := map[string]string{"AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/token", "AWS_ROLE_ARN": "arn:aws:iam::1:role/t", "AWS_ROLE_SESSION_NAME": "ts-1"}
	c, err = parse(irsa)
	if err != nil || c.IAM != (IAM{WebIdentityTokenFile: "/var/run/token", RoleARN: "arn:aws:iam::1:role/t", RoleSessionName: "ts-1"}) {
		t.Fatalf("web identity: %+v, %v", c.IAM, err)
	}
	if _, why := c.credentials(); !strings.Contains(why, "AWS_WEB_IDENTITY_TOKEN_FILE=/var/run/token role arn:aws:iam::1:role/t") {
		t.Errorf("web identity: a refusal would say %q", why)
	}
	irsa["AWS_SHARED_CREDENTIALS_FILE"] = "/run/creds"
	if c, _ = parse(irsa); !strings.Contains(func() string { _, w := c.credentials(); return w }(), "AWS_SHARED_CREDENTIALS_FILE") {
		t.Error("a credentials file does not come before the platform's credentials")
	}
	c, err = parse(map[string]string{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/x", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://127.0.0.1:9/c"})
	if err != nil || c.IAM.ContainerRelativeURI != "/v2/credentials/x" || c.IAM.ContainerFullURI != "http://127.0.0.1:9/c" {
		t.Fatalf("container: %+v, %v", c.IAM, err)
	}
	if _, why := c.credentials(); !strings.Contains(why, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/credentials/x") {
		t.Errorf("container: a refusal would say %q", why)
	}
	c, _ = parse(map[string]string{"AWS_PROFILE": "p", "AWS_ROLE_ARN": "arn"})
	if _, why := c.credentials(); !strings.Contains(why, "anonymous") {
		t.Errorf("nothing usable set: a refusal would say %q", why)
	}
	for _, bad := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/token"}, "needs AWS_ROLE_ARN"},
		{map[string]string{"AWS_SECRET_ACCESS_KEY": "sk", "AWS_SHARED_CREDENTIALS_FILE": "/run/creds"}, "set both"},
	} {
		if _, err := parse(bad.env); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v; want an error saying %q", bad.env, err, bad.want)
		}
	}
}

// TestOpenNamesCredentialsFile: a credentials file that cannot be used
// stops Open, before any request, with an error naming it and the profile.
func TestOpenNamesCredentialsFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "credentials")
	os.WriteFile(good, []byte("[default]\naws_access_key_id = A\naws_secret_access_key = s\n"), 0o600)
	for _, c := range []struct{ file, profile, want string }{
		{filepath.Join(dir, "missing"), "", "no such file"},
		{good, "other", "no profile [other]"},
	} {
		cfg := Config{Endpoint: "127.0.0.1:1", Bucket: "b", Root: "/storage", CredentialsFile: c.file, Profile: c.profile, Timeout: 3 * time.Second}
		_, err := Open(context.Background(), cfg)
		profile := c.profile
		if profile == "" {
			profile = "default"
		}
		if err == nil || !strings.Contains(err.Error(), "AWS_SHARED_CREDENTIALS_FILE="+c.file+" profile "+profile) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s profile %q: %v", c.file, c.profile, err)
		}
	}
}

// TestIAMContainerCredentials: with a container credentials endpoint set,
// the keys are the endpoint's, and an endpoint that fails is an error that
// names it. (minio-go's IAM provider reads the variables from the process
// environment first; they are cleared so that the Config's are used.)
func TestIAMContainerCredentials(t *testing.T) {
	for _, k := range []string{"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"} {
		t.Setenv(k, "")
	}
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "no role", http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, `{"AccessKeyId": "IAMKEY", "SecretAccessKey": "iamsecret", "Token": "iamtoken", "Expiration": %q}`,
			time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	defer srv.Close()
	c := Config{IAM: IAM{ContainerFullURI: srv.URL + "/creds"}}
	creds, why := c.credentials()
	v, err := creds.GetWithContext(nil)
	if err != nil || v.AccessKeyID != "IAMKEY" || v.SecretAccessKey != "iamsecret" || v.SessionToken != "iamtoken" {
		t.Fatalf("Get = %+v, %v", v, err)
	}
	if !strings.Contains(why, "AWS_CONTAINER_CREDENTIALS_FULL_URI="+srv.URL) {
		t.Errorf("a refusal would say %q", why)
	}
	fail.Store(true)
	creds, _ = c.credentials()
	if _, err := creds.GetWithContext(nil); err == nil || !strings.Contains(err.Error(), "getting credentials from AWS_CONTAINER_CREDENTIALS_FULL_URI="+srv.URL) {
		t.Fatalf("a failing endpoint: %v", err)
	}
}

// writeCredentials writes the credentials file as a rotating agent does:
// a temporary file renamed over the old one.
func writeCredentials(t *testing.T, path, id, secret string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte("[default]\naws_access_key_id = "+id+"\naws_secret_access_key = "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func writeFile(f *FS, name, data string) error {
	w, err := f.Create(name)
	if err != nil {
		return err
	}
	w.Write([]byte(data))
	if err := w.Sync(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func readFile(t *testing.T, f *FS, name string) string {
	t.Helper()
	r, err := f.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRotatedCredentials: key A, from a credentials file, stops working
// mid-run (the store restarts without it, as an expired session token
// would be refused); a write then fails with an error that says the store
// refused the credentials of that file, and what was written before is
// intact. Once the file holds key B the same FS, not reopened, writes
// again, and everything written is readable.
func TestRotatedCredentials(t *testing.T) {
	identity := func(name, key, secret string) string {
		return `{"name": "` + name + `", "credentials": [{"accessKey": "` + key + `", "secretKey": "` + secret + `"}],
			"actions": ["Admin:tabula", "Read:tabula", "Write:tabula", "List:tabula", "Tagging:tabula"]}`
	}
	a, b := identity("a", "KEYA", "secret-a"), identity("b", "KEYB", "secret-bb")
	srv := seaweedtest.Start(t, seaweed.Config{Bucket: "tabula", S3Config: `{"identities": [` + a + `, ` + b + `]}`})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	file := filepath.Join(t.TempDir(), "credentials")
	writeCredentials(t, file, "KEYA", "secret-a")
	cfg := config(t, srv, "rotate")
	cfg.CredentialsFile = file
	var f *FS
	for { // weed creates the bucket just after its gateway answers
		var err error
		if f, err = Open(ctx, cfg); err == nil {
			break
		}
		if !strings.Contains(err.Error(), "does not exist") || ctx.Err() != nil {
			t.Fatalf("open with key A: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := writeFile(f, "/storage/before", "written with A"); err != nil {
		t.Fatal(err)
	}
	w, err := f.Create("/storage/during")
	if err != nil {
		t.Fatal(err)
	}

	if err := srv.SetS3Config(`{"identities": [` + b + `]}`); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("never acknowledged"))
	err = w.Sync()
	t.Logf("sync with a revoked key: %v", err)
	if err == nil || !strings.Contains(err.Error(), "the store refused the credentials in AWS_SHARED_CREDENTIALS_FILE="+file+" profile default") {
		t.Fatalf("sync with a revoked key: %v; want an error naming the credentials file", err)
	}
	w.Close()

	writeCredentials(t, file, "KEYB", "secret-bb")
	// The file is looked at once a second: until then the old key is
	// refused. (The first write after weed restarted also waits, ~10 s,
	// for its volumes.) The deadline only guards against a hang.
	for {
		err := writeFile(f, "/storage/after", "written with B")
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "refused the credentials") || ctx.Err() != nil {
			t.Fatalf("write after the rotation: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := readFile(t, f, "/storage/before"); got != "written with A" {
		t.Fatalf("the file written with A reads %q", got)
	}
	if got := readFile(t, f, "/storage/after"); got != "written with B" {
		t.Fatalf("the file written with B reads %q", got)
	}
}
