package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/gateway"
)

// A gateway whose client reaches the master is ready; one whose master
// address answers nothing is not.
func TestReady(t *testing.T) {
	ctx := testContext(t)
	live, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{cluster.MasterAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := gateway.Ready(ctx, live); err != nil {
		t.Fatalf("gateway whose master answers: %v", err)
	}
	// A client that reaches no master any more (closed here; in life, the
	// masters went away) makes the gateway not ready.
	gone, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{cluster.MasterAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := gateway.Ready(dctx, gone); err == nil {
		t.Fatal("gateway whose client reaches no master: ready, want an error")
	} else {
		t.Logf("not ready: %v", err)
	}
}
