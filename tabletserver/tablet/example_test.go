package tablet_test

import (
	"context"
	"fmt"
	"os"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

func Example() {
	dir, err := os.MkdirTemp("", "tablet-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	t, err := tablet.Open(tablet.Options{
		Dir:      dir,
		Create:   true, // a brand-new tablet
		Families: []families.Family{{Name: "cf", MaxVersions: 2}},
	})
	if err != nil {
		panic(err)
	}
	defer t.Close()
	for ts := int64(1); ts <= 3; ts++ {
		err := t.Apply(ctx, []byte("user#1"), []cell.Mutation{{Kind: cell.SetCell,
			Family: "cf", Qualifier: []byte("name"), Timestamp: ts, Value: []byte(fmt.Sprint("v", ts))}})
		if err != nil {
			panic(err)
		}
	}
	if err := t.Flush(ctx); err != nil {
		panic(err)
	}
	cells, err := t.ReadRow(ctx, []byte("user#1"), nil)
	if err != nil {
		panic(err)
	}
	for _, c := range cells {
		fmt.Printf("%s %s:%s@%d = %s\n", c.Row, c.Family, c.Qualifier, c.Timestamp, c.Value)
	}
	// Output:
	// user#1 cf:name@3 = v3
	// user#1 cf:name@2 = v2
}
