package master

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/meta"
)

// TestDeletionProtection: a table created protected, or protected later,
// keeps itself and its families (FAILED_PRECONDITION naming the way out)
// while other schema changes go on; the switch is stored in etcd's
// schema and reported; lifted, both deletes go through.
func TestDeletionProtection(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1 := c.startServer("s1")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	protected := schema("p", "a", "b")
	protected.DeletionProtection = true
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: protected}); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("q", "a")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "p", 1, s1)
	stored := func(table string) bool {
		t.Helper()
		rec, _, err := meta.GetTable(ctx, c.cli, m.layout, table)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Schema.GetDeletionProtection()
	}
	if !stored("p") || stored("q") {
		t.Fatalf("stored deletion protection: p %v, q %v; want p only", stored("p"), stored("q"))
	}
	refused := func(what string, err error) {
		t.Helper()
		testkit.WantCode(t, what, err, codes.FailedPrecondition, "protected from deletion; lift it first with `tabula table unprotect")
	}
	_, err := mc.DeleteTable(ctx, &tabulapb.DeleteTableRequest{Table: "p"})
	refused("DeleteTable", err)
	_, err = mc.DeleteFamily(ctx, &tabulapb.DeleteFamilyRequest{Table: "p", Family: "a"})
	refused("DeleteFamily", err)
	// Everything but deletes goes on.
	if _, err := mc.AddFamily(ctx, &tabulapb.FamilyRequest{Table: "p", Family: &tabulapb.Family{Name: "c"}}); err != nil {
		t.Fatalf("AddFamily on a protected table: %v", err)
	}
	if _, err := mc.ModifyFamily(ctx, &tabulapb.FamilyRequest{Table: "p", Family: &tabulapb.Family{Name: "a", MaxVersions: 3}}); err != nil {
		t.Fatalf("ModifyFamily on a protected table: %v", err)
	}
	desc, err := mc.DescribeTable(ctx, &tabulapb.DescribeTableRequest{Table: "p"})
	if err != nil || !desc.GetSchema().GetDeletionProtection() || desc.GetSchema().GetState() != meta.TableEnabled || len(desc.GetSchema().GetFamilies()) != 3 {
		t.Fatalf("DescribeTable = %v, %v; want p protected, enabled, with 3 families", desc.GetSchema(), err)
	}

	// Protecting an existing table.
	if _, err := mc.SetDeletionProtection(ctx, &tabulapb.SetDeletionProtectionRequest{Table: "q", Protected: true}); err != nil {
		t.Fatal(err)
	}
	_, err = mc.DeleteTable(ctx, &tabulapb.DeleteTableRequest{Table: "q"})
	refused("DeleteTable after SetDeletionProtection", err)
	list, err := mc.ListTables(ctx, &tabulapb.ListTablesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.GetTables() {
		if !s.GetDeletionProtection() {
			t.Errorf("ListTables: %s not protected", s.GetName())
		}
	}
	_, err = mc.SetDeletionProtection(ctx, &tabulapb.SetDeletionProtectionRequest{Table: "nope", Protected: true})
	testkit.WantCode(t, "an unknown table", err, codes.NotFound, "nope")

	// Lifted: both deletes go through.
	for _, name := range []string{"p", "q"} {
		if _, err := mc.SetDeletionProtection(ctx, &tabulapb.SetDeletionProtectionRequest{Table: name}); err != nil {
			t.Fatal(err)
		}
	}
	if stored("p") {
		t.Fatal("p still protected in etcd")
	}
	if _, err := mc.DeleteFamily(ctx, &tabulapb.DeleteFamilyRequest{Table: "p", Family: "a"}); err != nil {
		t.Fatalf("DeleteFamily once lifted: %v", err)
	}
	for _, name := range []string{"p", "q"} {
		if _, err := mc.DeleteTable(ctx, &tabulapb.DeleteTableRequest{Table: name}); err != nil {
			t.Fatalf("DeleteTable(%s) once lifted: %v", name, err)
		}
	}
}
