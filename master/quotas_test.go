package master

import (
	"context"
	"math"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/meta"
)

// TestQuotaAdmin: the master's Quotas service writes the etcd records the
// tablet servers follow (docs/CONTRACTS.md §4), refuses what is not a
// quota with INVALID_ARGUMENT saying what is wrong, lists the quotas by
// scope and name, and answers NOT_FOUND for removing a quota not set.
func TestQuotaAdmin(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	c.waitLeader(m)
	qc := tabulapb.NewQuotasClient(c.conn(m.Addr()))
	ctx := context.Background()
	set := func(scope, name string, l *tabulapb.QuotaLimits) error {
		_, err := qc.SetQuota(ctx, &tabulapb.SetQuotaRequest{Scope: scope, Name: name, Limits: l})
		return err
	}
	for _, bad := range []struct {
		what, scope, name string
		l                 *tabulapb.QuotaLimits
		want              string
	}{
		{"unknown scope", "user", "x", &tabulapb.QuotaLimits{ReadRequests: 1}, "want table, namespace or principal"},
		{"no limit", "table", "t", &tabulapb.QuotaLimits{}, "no limit given"},
		{"negative", "table", "t", &tabulapb.QuotaLimits{WriteBytes: -1}, "write_bytes -1 is not a rate"},
		{"infinite", "table", "t", &tabulapb.QuotaLimits{ReadRequests: math.Inf(1)}, "finite"},
		{"space on a principal", "principal", "p", &tabulapb.QuotaLimits{SpaceBytes: 1}, "not principals"},
		{"default: prefix", "table", "default:t", &tabulapb.QuotaLimits{ReadRequests: 1}, `write "t"`},
		{"bad namespace", "namespace", "a.b", &tabulapb.QuotaLimits{ReadRequests: 1}, "A-Z a-z 0-9 _ -"},
		{"bad principal", "principal", "-x", &tabulapb.QuotaLimits{ReadRequests: 1}, "principal"},
	} {
		testkit.WantCode(t, bad.what, set(bad.scope, bad.name, bad.l), codes.InvalidArgument, bad.want)
	}
	if err := set("table", "ns:t", &tabulapb.QuotaLimits{ReadRequests: 100, SpaceBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := set("principal", "batch", &tabulapb.QuotaLimits{WriteRequests: 5}); err != nil {
		t.Fatal(err)
	}
	entries, _, err := meta.LoadQuotas(ctx, c.cli, c.layout)
	if err != nil || len(entries) != 2 {
		t.Fatalf("etcd holds %+v, %v; want the two quotas", entries, err)
	}
	if err := meta.PutQuotaUsage(ctx, c.cli, c.layout, "table", "ns:t", meta.UsageRecord{Bytes: 7, At: 9}); err != nil {
		t.Fatal(err)
	}
	list, err := qc.ListQuotas(ctx, &tabulapb.ListQuotasRequest{})
	if err != nil {
		t.Fatal(err)
	}
	q := list.GetQuotas()
	if len(q) != 2 || q[0].GetScope() != "principal" || q[0].GetLimits().GetWriteRequests() != 5 || q[0].GetHasUsage() ||
		q[1].GetName() != "ns:t" || !q[1].GetHasUsage() || q[1].GetUsedBytes() != 7 || q[1].GetLimits().GetSpaceBytes() != 1<<20 {
		t.Fatalf("ListQuotas = %v", q)
	}
	if _, err := qc.RemoveQuota(ctx, &tabulapb.RemoveQuotaRequest{Scope: "table", Name: "ns:t"}); err != nil {
		t.Fatal(err)
	}
	_, err = qc.RemoveQuota(ctx, &tabulapb.RemoveQuotaRequest{Scope: "table", Name: "ns:t"})
	testkit.WantCode(t, "removing it again", err, codes.NotFound, "has no quota")
	if entries, _, _ := meta.LoadQuotas(ctx, c.cli, c.layout); len(entries) != 1 {
		t.Fatalf("after the removal etcd holds %+v; want the principal's quota only (the usage record goes with its quota)", entries)
	}
}
