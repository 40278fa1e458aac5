package auth

import (
	"testing"

	pb "github.com/tabuladb/tabula/api/tabulapb"
)

// TestFlushTableRule: flushing a table's memtables is an audited admin
// call on the table named, as CompactTable is, and the per-tablet
// FlushTablet is the master's alone.
func TestFlushTableRule(t *testing.T) {
	r, ok := MasterRules()["/tabula.v1.Master/FlushTable"]
	c := MasterRules()["/tabula.v1.Master/CompactTable"]
	if !ok || r.Role != Admin || !r.Audit || r.Cluster || r.Open || r.Tables == nil || r.Role != c.Role || r.Audit != c.Audit {
		t.Fatalf("FlushTable rule %+v, want an audited Admin rule on its table, as CompactTable's %+v", r, c)
	}
	if got := r.Tables(&pb.FlushTableRequest{Table: "users"}); len(got) != 1 || got[0] != "users" {
		t.Errorf("FlushTable tables = %q, want [users]", got)
	}
	ts, ok := TabletServerRules()["/tabula.v1.TabletServer/FlushTablet"]
	if !ok || !ts.MasterOnly {
		t.Fatalf("FlushTablet rule %+v, want master-only", ts)
	}
}
