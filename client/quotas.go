package client

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// QuotaAdmin sets, lists and removes quotas through the master (tabula
// quota set, list, remove; docs/OPERATIONS.md "Quotas"). Setting or
// removing a table's quota needs admin on the table; a namespace's or a
// principal's, the cluster's admin role; listing, read on the cluster.
type QuotaAdmin interface {
	SetQuota(ctx context.Context, q QuotaInfo) error
	RemoveQuota(ctx context.Context, scope, name string) error
	ListQuotas(ctx context.Context) ([]QuotaInfo, error)
}

var _ QuotaAdmin = (*AdminClient)(nil)

// QuotaInfo is one quota: Scope "table", "namespace" or "principal", the
// Name it limits and its limits (0: no limit; rates per second across
// the cluster).
type QuotaInfo struct {
	Scope, Name   string
	ReadRequests  float64
	ReadBytes     float64
	WriteRequests float64 // rows written a second
	WriteBytes    float64
	SpaceBytes    int64
	// Used is the stored size the master last published for a space
	// quota, measured at UsedAt; HasUsage says whether it did. Filled by
	// ListQuotas only.
	HasUsage bool
	Used     int64
	UsedAt   time.Time
}

// callQuotas runs fn on a master's Quotas service, retrying as call does.
func (a *AdminClient) callQuotas(ctx context.Context, fn func(context.Context, tabulapb.QuotasClient) error) error {
	return a.retry(ctx, func(ctx context.Context) error {
		return a.c.loc.CallMasterConn(ctx, func(ctx context.Context, cc grpc.ClientConnInterface) error {
			return fn(ctx, tabulapb.NewQuotasClient(cc))
		})
	})
}

// SetQuota creates or replaces the quota of q.Scope and q.Name with q's
// limits (INVALID_ARGUMENT saying what is wrong with them).
func (a *AdminClient) SetQuota(ctx context.Context, q QuotaInfo) error {
	req := &tabulapb.SetQuotaRequest{Scope: q.Scope, Name: q.Name, Limits: &tabulapb.QuotaLimits{
		ReadRequests: q.ReadRequests, ReadBytes: q.ReadBytes, WriteRequests: q.WriteRequests, WriteBytes: q.WriteBytes, SpaceBytes: q.SpaceBytes}}
	return a.callQuotas(ctx, func(ctx context.Context, c tabulapb.QuotasClient) error {
		_, err := c.SetQuota(ctx, req)
		return err
	})
}

// RemoveQuota drops a quota; NOT_FOUND if there is none.
func (a *AdminClient) RemoveQuota(ctx context.Context, scope, name string) error {
	return a.callQuotas(ctx, func(ctx context.Context, c tabulapb.QuotasClient) error {
		_, err := c.RemoveQuota(ctx, &tabulapb.RemoveQuotaRequest{Scope: scope, Name: name})
		return err
	})
}

// ListQuotas lists every quota, by scope and name, with its usage.
func (a *AdminClient) ListQuotas(ctx context.Context) ([]QuotaInfo, error) {
	var resp *tabulapb.ListQuotasResponse
	err := a.callQuotas(ctx, func(ctx context.Context, c tabulapb.QuotasClient) (err error) {
		resp, err = c.ListQuotas(ctx, &tabulapb.ListQuotasRequest{})
		return err
	})
	var out []QuotaInfo
	for _, q := range resp.GetQuotas() {
		l := q.GetLimits()
		qi := QuotaInfo{Scope: q.GetScope(), Name: q.GetName(), ReadRequests: l.GetReadRequests(), ReadBytes: l.GetReadBytes(),
			WriteRequests: l.GetWriteRequests(), WriteBytes: l.GetWriteBytes(), SpaceBytes: l.GetSpaceBytes(), HasUsage: q.GetHasUsage()}
		if qi.HasUsage {
			qi.Used, qi.UsedAt = q.GetUsedBytes(), time.Unix(q.GetUsedAtUnix(), 0)
		}
		out = append(out, qi)
	}
	return out, err
}
