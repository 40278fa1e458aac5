package locator_test

import (
	"context"
	"fmt"
	"log"

	"github.com/tabuladb/tabula/locator"
)

// Needs a running master, so it has no Output comment.
func ExampleLocator_Locate() {
	loc, err := locator.New([]string{"127.0.0.1:7000", "127.0.0.1:7001"}, locator.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer loc.Close()
	t, err := loc.Locate(context.Background(), "users", []byte("user42"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("tablet %s [%q, %q) at %s, epoch %d\n", t.ID, t.Start, t.End, t.Address, t.Epoch)
	// When t's server answers "not serving": drop exactly that entry.
	loc.Invalidate(t)
}
