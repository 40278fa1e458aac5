package auth

import (
	"testing"

	pb "github.com/tabuladb/tabula/api/tabulapb"
)

// TestBalancerRules: moving a tablet is an audited admin call on its
// table; switching the balancer is cluster admin; reading its status needs
// cluster-wide read.
func TestBalancerRules(t *testing.T) {
	rules := MasterRules()
	r, ok := rules["/tabula.v1.Master/MoveTablet"]
	if !ok || r.Role != Admin || !r.Audit || r.Cluster || r.Open || r.Tables == nil {
		t.Fatalf("MoveTablet rule %+v, want an audited Admin rule on its table", r)
	}
	if got := r.Tables(&pb.MoveTabletRequest{Table: "users"}); len(got) != 1 || got[0] != "users" {
		t.Errorf("MoveTablet tables = %q, want [users]", got)
	}
	if r := rules["/tabula.v1.Master/SetBalancer"]; r.Role != Admin || !r.Cluster || !r.Audit || r.Open {
		t.Errorf("SetBalancer rule %+v, want audited cluster Admin", r)
	}
	if r := rules["/tabula.v1.Master/GetBalancer"]; r.Role != Read || !r.Cluster || r.Open {
		t.Errorf("GetBalancer rule %+v, want cluster Read", r)
	}
}
