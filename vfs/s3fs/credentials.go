package s3fs

import (
	"errors"
	"fmt"

	"github.com/minio/minio-go/v7/pkg/credentials"
)

// IAM names the platform's credentials (AWS_WEB_IDENTITY_TOKEN_FILE for
// Kubernetes IRSA, AWS_CONTAINER_CREDENTIALS_* for ECS and EKS Pod
// Identity): short-lived keys that minio-go's IAM provider fetches and
// refreshes before they expire. With none set the platform is not asked:
// the EC2 metadata endpoint, which hangs on hosts outside AWS, is never
// probed, so an EC2 instance role needs one of these, or keys in the
// environment or in a credentials file.
type IAM struct {
	WebIdentityTokenFile, RoleARN, RoleSessionName string
	ContainerRelativeURI, ContainerFullURI         string
}

func (m IAM) set() bool {
	return m.WebIdentityTokenFile != "" || m.ContainerRelativeURI != "" || m.ContainerFullURI != ""
}

// credentials picks the provider, in order: keys in the environment (fixed
// for the life of the process, as the environment is), a shared credentials
// file (re-read when it changes), the platform (IAM), else anonymous. The
// string is what to say when the store refuses them: where they came from
// and what to do, as an operator reading a failed write needs to know.
func (c Config) credentials() (*credentials.Credentials, string) {
	switch {
	case c.AccessKey != "":
		return credentials.NewStaticV4(c.AccessKey, c.SecretKey, c.SessionToken),
			"the store refused the credentials in AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; " +
				"fix them and restart (the environment is read once; for keys that rotate, use AWS_SHARED_CREDENTIALS_FILE)"
	case c.CredentialsFile != "":
		profile := c.Profile
		if profile == "" {
			profile = "default"
		}
		p := newFileCreds(c.CredentialsFile, profile, c.Logger)
		return credentials.New(labelled{p, p.where()}),
			"the store refused the credentials in " + p.where() + "; rotate or fix that file: Tabula re-reads it"
	case c.IAM.set():
		where := iamWhere(c.IAM)
		m := &credentials.IAM{Region: c.Region}
		m.EKSIdentity.TokenFile, m.EKSIdentity.RoleARN, m.EKSIdentity.RoleSessionName = c.IAM.WebIdentityTokenFile, c.IAM.RoleARN, c.IAM.RoleSessionName
		m.Container.CredentialsRelativeURI, m.Container.CredentialsFullURI = c.IAM.ContainerRelativeURI, c.IAM.ContainerFullURI
		return credentials.New(labelled{m, where}),
			"the store refused the credentials from " + where + "; check the role's permissions on the bucket " +
				"(Tabula refreshes these credentials before they expire)"
	}
	return credentials.New(&credentials.Static{}),
		"the store refused anonymous requests (no credentials are set); " +
			"set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_SHARED_CREDENTIALS_FILE"
}

// iamWhere names the variable the IAM provider acts on, in its order.
func iamWhere(m IAM) string {
	switch {
	case m.WebIdentityTokenFile != "":
		return fmt.Sprintf("AWS_WEB_IDENTITY_TOKEN_FILE=%s role %s", m.WebIdentityTokenFile, m.RoleARN)
	case m.ContainerRelativeURI != "":
		return "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=" + m.ContainerRelativeURI
	}
	return "AWS_CONTAINER_CREDENTIALS_FULL_URI=" + m.ContainerFullURI
}

// credError is a failure to get credentials from their source (not a
// refusal by the store); its text names the source.
type credError struct {
	where string
	err   error
}

func (e *credError) Error() string {
	return fmt.Sprintf("getting credentials from %s: %v", e.where, e.err)
}

func (e *credError) Unwrap() error { return e.err }

// labelled marks a provider's errors with its source, so that a request
// that fails for want of credentials says where they should have come from.
type labelled struct {
	credentials.Provider
	where string
}

func (l labelled) RetrieveWithCredContext(cc *credentials.CredContext) (credentials.Value, error) {
	v, err := l.Provider.RetrieveWithCredContext(cc)
	var ce *credError
	if err != nil && !errors.As(err, &ce) {
		err = &credError{l.where, err}
	}
	return v, err
}

func (l labelled) Retrieve() (credentials.Value, error) { return l.RetrieveWithCredContext(nil) }
