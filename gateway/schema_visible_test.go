package gateway_test

import (
	"context"
	"fmt"
	"testing"

	"cloud.google.com/go/bigtable"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
)

// TestNewFamilyIsWritableAtOnce: once the call that adds a family returns,
// every write to it succeeds, however soon after it comes, through the
// gateway and through Tabula's own client. A new table's tablets load
// while the family is added, so the push of the new schema can miss a
// tablet still loading with the schema it read before (the Go client's
// TestIntegration_HighlyConcurrentReadsAndWrites failed on this with
// NOT_FOUND "tablet: unknown family").
func TestNewFamilyIsWritableAtOnce(t *testing.T) {
	ctx := testContext(t)
	t.Run("gateway", func(t *testing.T) {
		c, a := bigtableClients(t)
		for i := range 20 {
			name := fmt.Sprintf("fresh%d", i)
			createTable(t, a, &bigtable.TableConf{TableID: name, SplitKeys: []string{"m"}})
			if err := a.CreateColumnFamily(ctx, name, "cf"); err != nil {
				t.Fatal(err)
			}
			tbl := c.Open(name)
			for _, row := range []string{"a", "z"} {
				if err := tbl.Apply(ctx, row, set("cf", "q", 1000, "v")); err != nil {
					t.Errorf("table %s row %s: write right after the family was created: %v", name, row, err)
				}
			}
			m := bigtable.NewCondMutation(nil, set("cf", "c", 1000, "v"), nil)
			if err := tbl.Apply(ctx, "b", m); err != nil {
				t.Errorf("table %s: conditional write: %v", name, err)
			}
			rmw := bigtable.NewReadModifyWrite()
			rmw.Increment("cf", "n", 1)
			if _, err := tbl.ApplyReadModifyWrite(ctx, "y", rmw); err != nil {
				t.Errorf("table %s: read-modify-write: %v", name, err)
			}
		}
	})
	t.Run("native client", func(t *testing.T) {
		c := tabulaClient(t)
		for i := range 20 {
			name := fmt.Sprintf("freshnative%d", i)
			if err := c.Admin().CreateTable(ctx, name, []families.Family{families.Default("old")}, [][]byte{[]byte("m")}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Admin().DeleteTable(context.Background(), name) })
			if err := c.Admin().AddFamily(ctx, name, families.Default("cf")); err != nil {
				t.Fatal(err)
			}
			for _, row := range []string{"a", "z"} {
				if err := c.Open(name).Apply(ctx, []byte(row), client.NewMutation().Set("cf", []byte("q"), 1000, []byte("v"))); err != nil {
					t.Errorf("table %s row %s: write right after the family was added: %v", name, row, err)
				}
			}
		}
	})
}
