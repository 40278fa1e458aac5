package master

import (
	"context"
	"errors"
	"fmt"

	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/opshttp"
)

// Ready reports whether this master is fit to take calls: nil for the
// leader, and for a standby whose election session is alive (it will take
// over when the leader goes), as long as it reaches etcd now. A master
// that cannot reach etcd is not ready even while it still counts as
// leader: its term is about to end and every write of it fails meanwhile.
// The error says what is missing, for /readyz and operators.
func (m *Master) Ready(ctx context.Context) error {
	if m.ctx.Err() != nil {
		return ErrClosed
	}
	m.mu.Lock()
	leader, sess := m.mu.leader != nil, m.mu.session
	m.mu.Unlock()
	role := "leader"
	if !leader {
		role = "standby"
		if sess == nil {
			return errors.New("master: standby without an election session: it cannot open one in etcd (etcd unreachable?)")
		}
		select {
		case <-sess.Done():
			return errors.New("master: standby whose election session expired: opening a new one")
		default:
		}
	}
	// One cheap linearizable read: it needs an etcd quorum, as the
	// master's every write does.
	if err := meta.Probe(ctx, m.cli, m.layout); err != nil {
		return fmt.Errorf("master: %s cannot reach etcd %v: %w", role, m.opts.Etcd, err)
	}
	return nil
}

// Health returns the master's readiness as served by its gRPC health
// service, for the process's HTTP endpoints (opshttp.Serve).
func (m *Master) Health() *opshttp.Health { return m.health }
