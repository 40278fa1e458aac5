package gateway_test

import (
	"context"
	"log"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/gateway"
)

// Serve the Cloud Bigtable API for the cluster whose master is at
// 127.0.0.1:7100; Bigtable clients then connect with
// BIGTABLE_EMULATOR_HOST=127.0.0.1:8086.
func ExampleStart() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7100")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	p, err := gateway.Start("127.0.0.1:8086", c, gateway.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	log.Printf("Bigtable API on %s", p.Addr())
}
