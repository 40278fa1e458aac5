package tabletserver

import (
	"testing"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// What each data call costs (docs/CONTRACTS.md "Quotas"): a
// CheckAndMutateRow is a write that also reads; a ReadModifyWriteRow a
// write; SampleRowKeys is not metered.
func TestQuotaRequestKinds(t *testing.T) {
	ref := &tabulapb.TabletRef{Table: "t"}
	set := []*tabulapb.Mutation{{Mutation: &tabulapb.Mutation_SetCell_{SetCell: &tabulapb.Mutation_SetCell{Family: "f", Value: []byte("v")}}}}
	q, ok := quotaRequest(&tabulapb.CheckAndMutateRowRequest{Tablet: ref, RowKey: []byte("r"), TrueMutations: set})
	if !ok || !q.Write || !q.Reads || !q.Grows || len(q.Tables) != 1 || q.Tables[0].Requests != 1 {
		t.Errorf("CheckAndMutateRow: %+v %v, want a growing write that reads, one request", q, ok)
	}
	q, ok = quotaRequest(&tabulapb.ReadModifyWriteRowRequest{Tablet: ref, RowKey: []byte("r")})
	if !ok || !q.Write || q.Reads {
		t.Errorf("ReadModifyWriteRow: %+v %v, want a write", q, ok)
	}
	if q, ok := quotaRequest(&tabulapb.SampleRowKeysRequest{Tablet: ref}); ok {
		t.Errorf("SampleRowKeys is metered: %+v", q)
	}
}
