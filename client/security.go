package client

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// checkSecurity refuses a token without TLS: gRPC would refuse every call
// with a less helpful error.
func (o Options) checkSecurity() error {
	if o.Token != "" && o.TLS == nil {
		return status.Error(codes.InvalidArgument, "client: a token needs TLS (Options.TLS, or --tls-ca on the command line): tokens are not sent in plaintext")
	}
	return nil
}

// securityDialOptions add TLS and the bearer token to the dial options;
// they come after the defaults, so TLS replaces plaintext.
func (o Options) securityDialOptions() []grpc.DialOption {
	var d []grpc.DialOption
	if o.TLS != nil {
		d = append(d, grpc.WithTransportCredentials(credentials.NewTLS(o.TLS)))
	}
	if o.Token != "" {
		d = append(d, grpc.WithPerRPCCredentials(bearerToken(o.Token)))
	}
	return d
}

// bearerToken sends "authorization: Bearer <token>" with every call.
type bearerToken string

func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

func (bearerToken) RequireTransportSecurity() bool { return true }
