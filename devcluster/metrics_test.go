package devcluster

import (
	"context"
	"testing"
	"time"

	"github.com/tabuladb/tabula/metrics"
)

// With Config.Metrics every component registers in the one registry under
// its own server label, and Close takes every series back, so a dev
// cluster restarted in the same process (tests do) registers again.
func TestMetricsOfEveryComponentUnderItsServerLabel(t *testing.T) {
	reg := metrics.NewRegistry()
	for round := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		c, err := Start(ctx, Config{Dir: t.TempDir(), Servers: 2, LeaseTTL: 2 * time.Second, NoFsync: true,
			GatewayAddr: "127.0.0.1:0", Metrics: reg})
		if err != nil {
			cancel()
			t.Fatalf("round %d: %v", round, err)
		}
		fs, err := metrics.Gather(reg)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"master", "ts-1", "ts-2", "gateway"} {
			if !fs.Has("tabula_grpc_server_handled_total", map[string]string{metrics.ServerLabel: s}) {
				t.Errorf("round %d: no gRPC series for server %s", round, s)
			}
		}
		for _, s := range []string{"ts-1", "ts-2"} {
			if !fs.Has("tabula_tabletserver_tablets", map[string]string{metrics.ServerLabel: s}) {
				t.Errorf("round %d: no tabula_tabletserver_tablets{server=%q}", round, s)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		cancel()
		fs, _ = metrics.Gather(reg)
		if left := fs.Tabula(); len(left) != 0 {
			t.Fatalf("round %d: still registered after Close: %v", round, left)
		}
	}
}
