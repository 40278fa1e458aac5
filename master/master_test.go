package master

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/meta"
)

func schema(name string, fams ...string) *tabulapb.TableSchema {
	s := &tabulapb.TableSchema{Name: name}
	for _, f := range fams {
		s.Families = append(s.Families, &tabulapb.Family{Name: f, MaxVersions: 1})
	}
	return s
}

func keys(ks ...string) [][]byte {
	out := make([][]byte, len(ks))
	for i, k := range ks {
		out[i] = []byte(k)
	}
	return out
}

// waitAllLoaded waits until every tablet of table is held, at its current
// epoch, by the server the tablet map names, and returns the tablets.
func waitAllLoaded(t *testing.T, c *cluster, table string, n int, servers ...*fakeServer) []meta.VersionedTablet {
	t.Helper()
	var ts []meta.VersionedTablet
	waitFor(t, 10*time.Second, func() (bool, string) {
		ts = c.tablets(table)
		if len(ts) != n {
			return false, fmt.Sprintf("%d tablets, want %d", len(ts), n)
		}
		for _, tb := range ts {
			ok := false
			for _, s := range servers {
				if s.id == tb.Server && s.holds()[tb.ID] == tb.Epoch && tb.Address == s.addr {
					ok = true
				}
			}
			if !ok {
				return false, fmt.Sprintf("tablet %s (server %q epoch %d) not loaded there", tb.ID, tb.Server, tb.Epoch)
			}
		}
		return true, ""
	})
	return ts
}

func TestCreateListDescribeDeleteTable(t *testing.T) {
	c := newCluster(t)
	root := t.TempDir()
	m := c.startMaster(Options{StorageRoot: root})
	s1, s2 := c.startServer("s1"), c.startServer("s2")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()

	got, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("users", "b", "a"), SplitKeys: keys("g", "n", "t")})
	if err != nil {
		t.Fatal(err)
	}
	if got.State != meta.TableEnabled || len(got.Families) != 2 || got.Families[0].Name != "a" {
		t.Fatalf("CreateTable answered %v", got)
	}
	_, err = mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("users", "a")})
	testkit.WantCode(t, "", err, codes.AlreadyExists, "users")

	// Pre-split ranges cover the key space exactly.
	ts := waitAllLoaded(t, c, "users", 4, s1, s2)
	bounds := []string{"", "g", "n", "t", ""}
	for i, tb := range ts {
		if string(tb.Start) != bounds[i] || string(tb.End) != bounds[i+1] {
			t.Errorf("tablet %d is [%q,%q), want [%q,%q)", i, tb.Start, tb.End, bounds[i], bounds[i+1])
		}
		if tb.Epoch != 1 || tb.State != meta.StateAssigned {
			t.Errorf("tablet %d: epoch %d state %s", i, tb.Epoch, tb.State)
		}
	}
	if n1, n2 := len(s1.holds()), len(s2.holds()); n1 != 2 || n2 != 2 {
		t.Errorf("tablets per server: %d and %d, want 2 and 2", n1, n2)
	}

	list, err := mc.ListTables(ctx, &tabulapb.ListTablesRequest{})
	if err != nil || len(list.Tables) != 1 || list.Tables[0].Name != "users" {
		t.Fatalf("ListTables = %v, %v", list, err)
	}
	desc, err := mc.DescribeTable(ctx, &tabulapb.DescribeTableRequest{Table: "users"})
	if err != nil || len(desc.Tablets) != 4 || desc.Schema.Name != "users" {
		t.Fatalf("DescribeTable = %v, %v", desc, err)
	}
	servers, err := mc.ListServers(ctx, &tabulapb.ListServersRequest{})
	if err != nil || len(servers.Servers) != 2 || servers.Servers[0].Tablets != 2 || servers.Servers[0].Address != s1.addr {
		t.Fatalf("ListServers = %v, %v", servers, err)
	}

	// Locate: every row lands in the tablet covering it.
	for _, row := range []string{"a", "g", "m", "n", "zzz"} {
		ti, err := mc.LocateTablet(ctx, &tabulapb.LocateTabletRequest{Table: "users", RowKey: []byte(row)})
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Compare([]byte(row), ti.StartKey) < 0 || (len(ti.EndKey) > 0 && bytes.Compare([]byte(row), ti.EndKey) >= 0) || ti.ServerAddress == "" {
			t.Errorf("row %q located in [%q,%q) at %q", row, ti.StartKey, ti.EndKey, ti.ServerAddress)
		}
	}
	lr, err := mc.LocateRange(ctx, &tabulapb.LocateRangeRequest{Table: "users", StartKey: []byte("h"), EndKey: []byte("t")})
	if err != nil || len(lr.Tablets) != 2 || string(lr.Tablets[0].StartKey) != "g" || string(lr.Tablets[1].StartKey) != "n" {
		t.Fatalf("LocateRange [h,t) = %v, %v", lr, err)
	}
	lr, err = mc.LocateRange(ctx, &tabulapb.LocateRangeRequest{Table: "users", Limit: 3})
	if err != nil || len(lr.Tablets) != 3 {
		t.Fatalf("LocateRange limit 3 = %v, %v", lr, err)
	}

	// Compact reaches every tablet.
	if _, err := mc.CompactTable(ctx, &tabulapb.CompactTableRequest{Table: "users", Major: true}); err != nil {
		t.Fatal(err)
	}
	s1.mu.Lock()
	nc := len(s1.compacts)
	s1.mu.Unlock()
	if nc != 2 {
		t.Errorf("s1 got %d compactions, want 2", nc)
	}

	dir := filepath.Join(root, "tables", "users", ts[0].ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.DeleteTable(ctx, &tabulapb.DeleteTableRequest{Table: "users"}); err != nil {
		t.Fatal(err)
	}
	_, err = mc.DescribeTable(ctx, &tabulapb.DescribeTableRequest{Table: "users"})
	testkit.WantCode(t, "", err, codes.NotFound, "users")
	_, err = mc.LocateTablet(ctx, &tabulapb.LocateTabletRequest{Table: "users", RowKey: []byte("a")})
	testkit.WantCode(t, "", err, codes.NotFound, "users")
	_, err = mc.DeleteTable(ctx, &tabulapb.DeleteTableRequest{Table: "users"})
	testkit.WantCode(t, "", err, codes.NotFound, "users")
	if len(c.tablets("users")) != 0 {
		t.Error("tablets survived DeleteTable")
	}
	if len(s1.holds())+len(s2.holds()) != 0 {
		t.Errorf("servers still hold tablets after DeleteTable: %v %v", s1.holds(), s2.holds())
	}
	if _, err := os.Stat(filepath.Join(root, "tables", "users")); !os.IsNotExist(err) {
		t.Errorf("table files survived DeleteTable: %v", err)
	}
	// The name is free again.
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("users", "a")}); err != nil {
		t.Fatal(err)
	}
}

func TestCreateTableRejectsBadInput(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	cases := []struct {
		name    string
		req     *tabulapb.CreateTableRequest
		mention string
	}{
		{"no schema", &tabulapb.CreateTableRequest{}, "schema"},
		{"bad table name", &tabulapb.CreateTableRequest{Schema: schema("a/b", "cf")}, "table name"},
		{"bad family name", &tabulapb.CreateTableRequest{Schema: schema("t", "c:f")}, "family name"},
		{"duplicate family", &tabulapb.CreateTableRequest{Schema: schema("t", "cf", "cf")}, "twice"},
		{"negative versions", &tabulapb.CreateTableRequest{Schema: &tabulapb.TableSchema{Name: "t", Families: []*tabulapb.Family{{Name: "cf", MaxVersions: -1}}}}, "max_versions"},
		{"negative threshold", &tabulapb.CreateTableRequest{Schema: &tabulapb.TableSchema{Name: "t", SplitThresholdBytes: -5}}, "split_threshold"},
		{"unsorted split keys", &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("m", "c")}, "split_keys[1]"},
		{"duplicate split keys", &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("c", "c")}, "split_keys[1]"},
		{"empty split key", &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("")}, "split_keys[0]"},
		{"too many split keys", &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: manyKeys(MaxSplitKeys + 1)}, "split_keys"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mc.CreateTable(ctx, tc.req)
			testkit.WantCode(t, "", err, codes.InvalidArgument, tc.mention)
		})
	}
	list, err := mc.ListTables(ctx, &tabulapb.ListTablesRequest{})
	if err != nil || len(list.Tables) != 0 {
		t.Fatalf("rejected creates left tables behind: %v %v", list, err)
	}
	// The largest allowed pre-split fits in one transaction.
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("big", "cf"), SplitKeys: manyKeys(MaxSplitKeys)}); err != nil {
		t.Fatal(err)
	}
	if n := len(c.tablets("big")); n != MaxSplitKeys+1 {
		t.Fatalf("big has %d tablets", n)
	}
}

func manyKeys(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf("k%05d", i))
	}
	return out
}

func TestFamilyChangesReachUpdateSchema(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{DefaultSplitThreshold: 1 << 20})
	s1 := c.startServer("s1")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "a"), SplitKeys: keys("m")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 2, s1)
	lastSchema := func() *tabulapb.TableSchema {
		s1.mu.Lock()
		defer s1.mu.Unlock()
		if len(s1.schemas) == 0 {
			return nil
		}
		return s1.schemas[len(s1.schemas)-1]
	}

	s, err := mc.AddFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "b", TtlMicros: 5e6}})
	if err != nil || len(s.Families) != 2 {
		t.Fatalf("AddFamily = %v, %v", s, err)
	}
	if ls := lastSchema(); ls == nil || len(ls.Families) != 2 || ls.Families[1].TtlMicros != 5e6 || ls.SplitThresholdBytes != 1<<20 {
		t.Fatalf("UpdateSchema after AddFamily got %v", ls)
	}
	_, err = mc.AddFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "b"}})
	testkit.WantCode(t, "", err, codes.AlreadyExists, "b")
	_, err = mc.AddFamily(ctx, &tabulapb.FamilyRequest{Table: "nope", Family: &tabulapb.Family{Name: "b"}})
	testkit.WantCode(t, "", err, codes.NotFound, "nope")
	_, err = mc.AddFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "c", BlockSize: 3}})
	testkit.WantCode(t, "", err, codes.InvalidArgument, "block size")

	if _, err := mc.ModifyFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "a", MaxVersions: 7}}); err != nil {
		t.Fatal(err)
	}
	if ls := lastSchema(); ls.Families[0].MaxVersions != 7 {
		t.Fatalf("UpdateSchema after ModifyFamily got %v", ls)
	}
	_, err = mc.ModifyFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "zz"}})
	testkit.WantCode(t, "", err, codes.NotFound, "zz")

	// A value type is fixed at creation.
	if _, err := mc.AddFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "s", ValueType: tabulapb.ValueType_VALUE_TYPE_SUM}}); err != nil {
		t.Fatal(err)
	}
	if ls := lastSchema(); len(ls.Families) != 3 || ls.Families[2].ValueType != tabulapb.ValueType_VALUE_TYPE_SUM {
		t.Fatalf("UpdateSchema after AddFamily of a sum family got %v", ls)
	}
	_, err = mc.ModifyFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "s"}})
	testkit.WantCode(t, "", err, codes.InvalidArgument, "the value type is fixed when the family is created (it is sum, not bytes)")
	_, err = mc.ModifyFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "a", ValueType: tabulapb.ValueType_VALUE_TYPE_MAX}})
	testkit.WantCode(t, "", err, codes.InvalidArgument, "fixed when the family is created")
	if _, err := mc.ModifyFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "s", MaxVersions: 2, ValueType: tabulapb.ValueType_VALUE_TYPE_SUM}}); err != nil {
		t.Fatal(err)
	}
	if ls := lastSchema(); ls.Families[2].MaxVersions != 2 || ls.Families[2].ValueType != tabulapb.ValueType_VALUE_TYPE_SUM {
		t.Fatalf("UpdateSchema after ModifyFamily of a sum family got %v", ls)
	}
	if _, err := mc.DeleteFamily(ctx, &tabulapb.DeleteFamilyRequest{Table: "t", Family: "s"}); err != nil {
		t.Fatal(err)
	}

	if _, err := mc.DeleteFamily(ctx, &tabulapb.DeleteFamilyRequest{Table: "t", Family: "a"}); err != nil {
		t.Fatal(err)
	}
	if ls := lastSchema(); len(ls.Families) != 1 || ls.Families[0].Name != "b" {
		t.Fatalf("UpdateSchema after DeleteFamily got %v", ls)
	}
	_, err = mc.DeleteFamily(ctx, &tabulapb.DeleteFamilyRequest{Table: "t", Family: "a"})
	testkit.WantCode(t, "", err, codes.NotFound, "a")
	desc, err := mc.DescribeTable(ctx, &tabulapb.DescribeTableRequest{Table: "t"})
	if err != nil || len(desc.Schema.Families) != 1 || desc.Schema.Families[0].Name != "b" {
		t.Fatalf("stored schema: %v %v", desc, err)
	}
}
