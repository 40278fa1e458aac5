package s3fs

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
)

// Config says where the objects live and how to reach them.
type Config struct {
	// Endpoint is the store's host:port; Secure selects https.
	Endpoint string
	Secure   bool
	// Bucket must exist; Prefix (no leading or trailing '/') is put in
	// front of every key.
	Bucket, Prefix string
	// Region is the bucket's region; the default is "us-east-1".
	Region string
	// Credentials, from the first of these that is set (credentials.go):
	// AccessKey, with SecretKey and SessionToken, fixed for the life of
	// the FS; CredentialsFile, the Profile (default "default") of a shared
	// credentials file, re-read when it changes; IAM, the platform's,
	// refreshed before they expire. None: anonymous.
	AccessKey, SecretKey, SessionToken string
	CredentialsFile, Profile           string
	IAM                                IAM
	// Logger gets the warning that a credentials file could not be
	// re-read. The default is slog.Default().
	Logger *slog.Logger
	// Root is the local path the FS serves: a name under Root maps to the
	// key Prefix/<name relative to Root>. Names outside Root are refused.
	Root string
	// SpoolDir holds the temporary files of writes in progress. The
	// default is the system's temporary directory.
	SpoolDir string
	// Timeout bounds one request. The default is 30s.
	Timeout time.Duration
}

// ParseURL parses s3://BUCKET[/PREFIX][?endpoint=http://HOST:PORT&region=R]
// and takes AWS_REGION, AWS_ENDPOINT_URL and the credentials' settings from
// getenv: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN;
// AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE; AWS_WEB_IDENTITY_TOKEN_FILE,
// AWS_ROLE_ARN, AWS_ROLE_SESSION_NAME, AWS_CONTAINER_CREDENTIALS_RELATIVE_URI,
// AWS_CONTAINER_CREDENTIALS_FULL_URI. ~/.aws/credentials is not read unless
// named, so that a stray file in a home folder never picks the keys.
func ParseURL(raw string, getenv func(string) string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("s3fs: storage URL %q: %v", raw, err)
	}
	if u.Scheme != "s3" || u.Host == "" {
		return Config{}, fmt.Errorf("s3fs: storage URL %q: want s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT", raw)
	}
	c := Config{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	q := u.Query()
	for k := range q {
		switch k {
		case "endpoint", "region":
		default:
			return Config{}, fmt.Errorf("s3fs: storage URL %q: unknown parameter %q (known: endpoint, region)", raw, k)
		}
	}
	ep := q.Get("endpoint")
	if ep == "" {
		ep = getenv("AWS_ENDPOINT_URL")
	}
	if ep == "" {
		ep = "https://s3.amazonaws.com"
	}
	e, err := url.Parse(ep)
	if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || (e.Path != "" && e.Path != "/") {
		return Config{}, fmt.Errorf("s3fs: storage URL %q: endpoint %q must be http://HOST:PORT or https://HOST[:PORT]", raw, ep)
	}
	c.Endpoint, c.Secure = e.Host, e.Scheme == "https"
	c.Region = q.Get("region")
	if c.Region == "" {
		c.Region = getenv("AWS_REGION")
	}
	c.AccessKey, c.SecretKey, c.SessionToken = getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"), getenv("AWS_SESSION_TOKEN")
	if (c.AccessKey == "") != (c.SecretKey == "") {
		return Config{}, fmt.Errorf("s3fs: storage URL %q: set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither", raw)
	}
	c.CredentialsFile, c.Profile = getenv("AWS_SHARED_CREDENTIALS_FILE"), getenv("AWS_PROFILE")
	c.IAM = IAM{
		WebIdentityTokenFile: getenv("AWS_WEB_IDENTITY_TOKEN_FILE"),
		RoleARN:              getenv("AWS_ROLE_ARN"),
		RoleSessionName:      getenv("AWS_ROLE_SESSION_NAME"),
		ContainerRelativeURI: getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
		ContainerFullURI:     getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
	}
	if c.AccessKey == "" && c.CredentialsFile == "" && c.IAM.WebIdentityTokenFile != "" && c.IAM.RoleARN == "" {
		return Config{}, fmt.Errorf("s3fs: storage URL %q: AWS_WEB_IDENTITY_TOKEN_FILE needs AWS_ROLE_ARN, the role to assume", raw)
	}
	return c, nil
}

func (c Config) withDefaults() Config {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	return c
}
