package meta

import (
	"context"
	"crypto/tls"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// NewClient opens the etcd client the master and the tablet servers use.
// It reconnects fast after etcd comes back: gRPC's default reconnect
// backoff grows to two minutes, and a server that reconnects seconds
// after etcd restarted would have paused (or a master lost its election
// session) for nothing. Keepalive pings find a dead connection within a
// few seconds. ctx bounds the client's life when not nil. A non-nil tlsCfg
// makes every connection TLS (with its client certificate, if it has
// one); nil means plaintext.
func NewClient(ctx context.Context, endpoints []string, tlsCfg *tls.Config) (*clientv3.Client, error) {
	cfg := clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
		TLS:                  tlsCfg,
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: time.Second,
		})},
	}
	if ctx != nil {
		cfg.Context = ctx
	}
	return clientv3.New(cfg)
}
