package tabletserver_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tabuladb/tabula/tabletserver"
)

func ExampleStart() {
	dir, err := os.MkdirTemp("", "tabula-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	srv, err := tabletserver.Start(context.Background(), tabletserver.Options{
		DataDir:  dir,
		Etcd:     tabletserver.EtcdEndpointsForTest(), // e.g. []string{"127.0.0.1:2379"}
		Cluster:  "example",
		LeaseTTL: 2 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The master now sees servers/<id> and may assign tablets to it.
	fmt.Println(srv.ID() == srv.Addr(), srv.Serving())
	if err := srv.Close(); err != nil { // flushes every tablet, releases the lease
		fmt.Println(err)
	}
	fmt.Println(srv.Serving())
	// Output:
	// true true
	// false
}
