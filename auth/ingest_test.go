package auth

import (
	"testing"

	"github.com/tabuladb/tabula/api/convert"
	pb "github.com/tabuladb/tabula/api/tabulapb"
)

// TestIngestRowsRule: a bulk load's messages are writes to the table they
// name, whether they arrive as the generated message or as the tablet
// server receives them (convert.IngestRequest: rows decoded as bytes).
func TestIngestRowsRule(t *testing.T) {
	r, ok := TabletServerRules()["/tabula.v1.BulkLoad/IngestRows"]
	if !ok || r.Role != Write || r.Tables == nil {
		t.Fatalf("IngestRows rule %+v, want a Write rule on its table", r)
	}
	ref := &pb.TabletRef{Table: "users", TabletId: "t1"}
	for _, msg := range []any{&pb.IngestRowsRequest{Tablet: ref}, &convert.IngestRequest{Tablet: ref}} {
		if got := r.Tables(msg); len(got) != 1 || got[0] != "users" {
			t.Errorf("IngestRows tables of %T = %q, want [users]", msg, got)
		}
	}
}
