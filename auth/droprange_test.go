package auth

import (
	"testing"

	pb "github.com/tabuladb/tabula/api/tabulapb"
)

// TestDropRowRangeRules: dropping rows in bulk is an audited admin call on
// the table named, and the per-tablet DropRange is the master's alone.
func TestDropRowRangeRules(t *testing.T) {
	r, ok := MasterRules()["/tabula.v1.Master/DropRowRange"]
	if !ok || r.Role != Admin || !r.Audit || r.Cluster || r.Open || r.Tables == nil {
		t.Fatalf("DropRowRange rule %+v, want an audited Admin rule on its table", r)
	}
	if got := r.Tables(&pb.DropRowRangeRequest{Table: "users"}); len(got) != 1 || got[0] != "users" {
		t.Errorf("DropRowRange tables = %q, want [users]", got)
	}
	ts, ok := TabletServerRules()["/tabula.v1.TabletServer/DropRange"]
	if !ok || !ts.MasterOnly {
		t.Fatalf("DropRange rule %+v, want master-only", ts)
	}
}
