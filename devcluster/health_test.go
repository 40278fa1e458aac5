package devcluster

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A started dev cluster becomes ready (master leading, servers holding
// their leases); a stopped one is not, and says which part.
func TestReadiness(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := Start(ctx, Config{Dir: t.TempDir(), Servers: 2, LeaseTTL: 2 * time.Second, NoFsync: true, Auth: secureAll()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		err := c.Ready(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("dev cluster never ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not synchronising
	}
	c.servers[1].Close()
	err = c.Ready(ctx)
	if err == nil || !strings.Contains(err.Error(), "tablet server "+c.servers[1].ID()) {
		t.Fatalf("a tablet server stopped: Ready = %v, want an error naming it", err)
	}
}
