package meta

import (
	"crypto/tls"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Dial opens a plain etcd client on one endpoint for a tool that reads
// records and probes a cluster from outside (tabula verify): etcd's
// default reconnects and no keepalive pings, unlike NewClient's, which
// are tuned for the long-lived processes. endpoint has no scheme (etcd's
// client takes "http://" to mean plaintext even with tlsCfg set); a nil
// tlsCfg means plaintext. Close it when done.
func Dial(endpoint string, tlsCfg *tls.Config, dialTimeout time.Duration) (Store, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: dialTimeout,
		Logger: zap.NewNop(), TLS: tlsCfg})
	if err != nil {
		return nil, fmt.Errorf("meta: connecting to etcd %s: %w", endpoint, err)
	}
	return c, nil
}
