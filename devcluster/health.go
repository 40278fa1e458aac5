package devcluster

import (
	"context"
	"errors"
	"fmt"
)

// Ready reports whether the whole dev cluster is fit for work: its master
// leads (a dev cluster has no standby to wait for) and every tablet server
// (and the gateway, if any) is ready. The error names the first part that
// is not, for the dev process's /readyz.
func (c *Cluster) Ready(ctx context.Context) error {
	if !c.master.IsLeader() {
		return errors.New("devcluster: the master does not lead yet")
	}
	if err := c.master.Ready(ctx); err != nil {
		return fmt.Errorf("devcluster: the master is not ready: %w", err)
	}
	for _, s := range c.servers {
		if err := s.Ready(ctx); err != nil {
			return fmt.Errorf("devcluster: tablet server %s is not ready: %w", s.ID(), err)
		}
	}
	if c.gateway != nil {
		if err := c.gateway.Health().Last(); err != nil {
			return fmt.Errorf("devcluster: the gateway is not ready: %w", err)
		}
	}
	return nil
}
