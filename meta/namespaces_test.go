package meta

import (
	"context"
	"errors"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/api/tabulapb"
)

func nsTable(name string) (TableRecord, []TabletRecord) {
	return TableRecord{Schema: &tabulapb.TableSchema{Name: name, Families: []*tabulapb.Family{{Name: "cf"}}}},
		[]TabletRecord{{Table: name, ID: "t1", State: StateUnassigned, Fresh: true}}
}

func TestNamespacesKeepTheirTablesApart(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("test")
	term := leader(t, cli, l.ElectionPrefix()+"m1")

	s, tl := nsTable("a:users")
	err := CreateTable(ctx, cli, l, s, tl, term)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "tabula namespace create a") {
		t.Fatalf("a table in a missing namespace: %v, want ErrNotFound naming the fix", err)
	}
	for _, ns := range []string{"a", "b"} {
		if err := CreateNamespace(ctx, cli, l, &tabulapb.Namespace{Name: ns}, term); err != nil {
			t.Fatal(err)
		}
	}
	if err := CreateNamespace(ctx, cli, l, &tabulapb.Namespace{Name: "a"}, term); !errors.Is(err, ErrConflict) {
		t.Fatalf("creating namespace a twice: %v, want ErrConflict", err)
	}
	for _, name := range []string{"a:users", "b:users", "users", "ab"} {
		s, tl := nsTable(name)
		if err := CreateTable(ctx, cli, l, s, tl, term); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
	}
	for ns, want := range map[string]string{"a": "a:users", "b": "b:users", "default": "ab users"} {
		got, err := NamespaceTables(ctx, cli, l, ns)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("NamespaceTables(%s) = %v, %v; want %s", ns, got, err, want)
		}
	}
	nss, bad, err := ListNamespaces(ctx, cli, l)
	if err != nil || len(bad) != 0 || len(nss) != 2 || nss[0].GetName() != "a" || nss[1].GetName() != "b" {
		t.Fatalf("ListNamespaces = %v, %v, %v", nss, bad, err)
	}

	_, rev, err := GetNamespace(ctx, cli, l, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := DeleteNamespace(ctx, cli, l, "a", rev, term); !errors.Is(err, ErrNamespaceNotEmpty) {
		t.Fatalf("deleting a namespace with a table: %v, want ErrNamespaceNotEmpty", err)
	}
	_, trev, _ := GetTable(ctx, cli, l, "a:users")
	if err := DeleteTable(ctx, cli, l, "a:users", trev, term); err != nil {
		t.Fatal(err)
	}
	if err := DeleteNamespace(ctx, cli, l, "a", rev, term); err != nil {
		t.Fatalf("deleting an empty namespace: %v", err)
	}
	if _, _, err := GetNamespace(ctx, cli, l, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("namespace a after its deletion: %v", err)
	}
	if got, _ := NamespaceTables(ctx, cli, l, "b"); len(got) != 1 {
		t.Fatalf("namespace b's tables after a's deletion: %v", got)
	}
}

// hookedKV runs hook once, when the transaction after the first one
// begins: between CreateTable's read of the namespace and its write.
type hookedKV struct {
	Store
	txns int
	hook func()
}

func (h *hookedKV) Txn(ctx context.Context) clientv3.Txn {
	h.txns++
	if h.txns == 2 && h.hook != nil {
		h.hook()
	}
	return h.Store.Txn(ctx)
}

// TestNamespaceDeletionCannotRaceTableCreation deletes the namespace (and,
// under max_tables, creates a table) between CreateTable's check of the
// namespace and its write: the write must fail, leaving no table.
func TestNamespaceDeletionCannotRaceTableCreation(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("test")
	term := leader(t, cli, l.ElectionPrefix()+"m1")
	if err := CreateNamespace(ctx, cli, l, &tabulapb.Namespace{Name: "a"}, term); err != nil {
		t.Fatal(err)
	}
	h := &hookedKV{Store: cli, hook: func() {
		_, rev, err := GetNamespace(ctx, cli, l, "a")
		if err != nil {
			t.Fatal(err)
		}
		if err := DeleteNamespace(ctx, cli, l, "a", rev, term); err != nil {
			t.Fatal(err)
		}
	}}
	s, tl := nsTable("a:t")
	if err := CreateTable(ctx, h, l, s, tl, term); !errors.Is(err, ErrConflict) {
		t.Fatalf("creating a table while its namespace is deleted: %v, want ErrConflict", err)
	}
	if _, _, err := GetTable(ctx, cli, l, "a:t"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a table outlived its namespace: %v", err)
	}

	if err := CreateNamespace(ctx, cli, l, &tabulapb.Namespace{Name: "m", MaxTables: 1}, term); err != nil {
		t.Fatal(err)
	}
	h = &hookedKV{Store: cli, hook: func() {
		s, tl := nsTable("m:first")
		if err := CreateTable(ctx, cli, l, s, tl, term); err != nil {
			t.Fatal(err)
		}
	}}
	s, tl = nsTable("m:second")
	if err := CreateTable(ctx, h, l, s, tl, term); !errors.Is(err, ErrConflict) {
		t.Fatalf("racing past max_tables: %v, want ErrConflict", err)
	}
	err := CreateTable(ctx, cli, l, s, tl, term)
	if !errors.Is(err, ErrNamespaceFull) || !strings.Contains(err.Error(), "max_tables is 1") {
		t.Fatalf("a table past max_tables: %v, want ErrNamespaceFull naming the limit", err)
	}
}
