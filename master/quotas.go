package master

import (
	"context"
	"errors"
	"sort"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/quota"
)

// startQuotaUsage publishes the stored size of every table and namespace
// with a space quota after each load report (quota.Usage; docs/
// OPERATIONS.md "Quotas"): the load report is the one place that knows
// every tablet's size. Only the leader collects reports, so only it
// writes.
func (m *Master) startQuotaUsage() {
	u := quota.NewUsage(m.cli, m.layout, m.log)
	m.OnLoadReport(func(r *LoadReport) {
		if !u.Wanted() {
			return
		}
		sizes := map[string]int64{}
		for _, t := range r.Tablets {
			sizes[t.Table] += t.SizeBytes
		}
		u.Observe(r.At, sizes)
	})
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		u.Run(m.ctx)
	}()
}

// quotaServer serves the Quotas service (api/tabulapb/quota.proto) on the
// master's port: `tabula quota` goes through it, so that setting a quota
// needs the cluster admin role (auth.QuotaRules), not write access to
// etcd. The leader validates a quota and writes its record under its
// term's guard; the tablet servers follow the records by watch.
type quotaServer struct {
	tabulapb.UnimplementedQuotasServer
	m *Master
}

// quotaKey checks a request's scope and name: a table's name as tables
// are named (a quota may precede its table), a namespace's and a
// principal's as they are.
func quotaKey(scope, name string) (quota.Key, error) {
	sc, err := quota.ParseScope(scope)
	if err != nil {
		return quota.Key{}, cell.Invalidf("%v", err)
	}
	switch sc {
	case quota.Table:
		err = cell.ValidateTableName(name)
	case quota.Namespace:
		err = cell.ValidateNamespaceName(name)
	case quota.Principal:
		if perr := auth.ValidatePrincipal(name); perr != nil {
			err = cell.Invalidf("%v", perr)
		}
	}
	return quota.Key{Scope: sc, Name: name}, err
}

func quotaRecord(l *tabulapb.QuotaLimits) meta.QuotaRecord {
	return meta.QuotaRecord{ReadRequests: l.GetReadRequests(), ReadBytes: l.GetReadBytes(),
		WriteRequests: l.GetWriteRequests(), WriteBytes: l.GetWriteBytes(), SpaceBytes: l.GetSpaceBytes()}
}

func quotaLimits(r meta.QuotaRecord) *tabulapb.QuotaLimits {
	return &tabulapb.QuotaLimits{ReadRequests: r.ReadRequests, ReadBytes: r.ReadBytes,
		WriteRequests: r.WriteRequests, WriteBytes: r.WriteBytes, SpaceBytes: r.SpaceBytes}
}

// SetQuota creates or replaces a quota.
func (s quotaServer) SetQuota(ctx context.Context, req *tabulapb.SetQuotaRequest) (*tabulapb.Quota, error) {
	q, err := s.setQuota(ctx, req)
	return q, toStatus(ctx, err)
}

func (s quotaServer) setQuota(ctx context.Context, req *tabulapb.SetQuotaRequest) (*tabulapb.Quota, error) {
	k, err := quotaKey(req.GetScope(), req.GetName())
	if err != nil {
		return nil, err
	}
	r := quotaRecord(req.GetLimits())
	if err := quota.ValidateLimits(k, r); err != nil {
		return nil, err
	}
	term, err := s.m.lead(ctx)
	if err != nil {
		return nil, err
	}
	if err := meta.PutQuota(ctx, s.m.cli, s.m.layout, string(k.Scope), k.Name, r, term.guard()); err != nil {
		return nil, err
	}
	s.m.log.Info("set quota", "scope", k.Scope, "name", k.Name, "limits", r)
	return &tabulapb.Quota{Scope: string(k.Scope), Name: k.Name, Limits: quotaLimits(r)}, nil
}

// RemoveQuota drops a quota and its usage record.
func (s quotaServer) RemoveQuota(ctx context.Context, req *tabulapb.RemoveQuotaRequest) (*tabulapb.RemoveQuotaResponse, error) {
	err := s.removeQuota(ctx, req)
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	return &tabulapb.RemoveQuotaResponse{}, nil
}

func (s quotaServer) removeQuota(ctx context.Context, req *tabulapb.RemoveQuotaRequest) error {
	// Only the scope is checked: a record of a name no longer valid (made
	// by hand in etcd) can still be removed.
	sc, err := quota.ParseScope(req.GetScope())
	if err != nil {
		return cell.Invalidf("%v", err)
	}
	if req.GetName() == "" {
		return cell.Invalidf("quota %s: the name is empty", sc)
	}
	term, err := s.m.lead(ctx)
	if err != nil {
		return err
	}
	err = meta.DeleteQuota(ctx, s.m.cli, s.m.layout, string(sc), req.GetName(), term.guard())
	if errors.Is(err, meta.ErrNotFound) {
		return notFoundf("%s %s has no quota (`tabula quota list` lists them)", sc, req.GetName())
	}
	if err == nil {
		s.m.log.Info("removed quota", "scope", sc, "name", req.GetName())
	}
	return err
}

// ListQuotas lists every quota with its published usage. A standby
// answers it from etcd, as it answers ListTables.
func (s quotaServer) ListQuotas(ctx context.Context, _ *tabulapb.ListQuotasRequest) (*tabulapb.ListQuotasResponse, error) {
	entries, _, err := meta.LoadQuotas(ctx, s.m.cli, s.m.layout)
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	usage := map[quota.Key]meta.UsageRecord{}
	for _, e := range entries {
		if e.IsUsage && e.Err == nil {
			usage[quota.Key{Scope: quota.Scope(e.Scope), Name: e.Name}] = e.Usage
		}
	}
	out := &tabulapb.ListQuotasResponse{}
	for _, e := range entries {
		if e.Err != nil {
			s.m.log.Warn("skipping an undecodable quota record", "err", e.Err)
			continue
		}
		if e.IsUsage {
			continue
		}
		q := &tabulapb.Quota{Scope: e.Scope, Name: e.Name, Limits: quotaLimits(e.Limits)}
		if u, ok := usage[quota.Key{Scope: quota.Scope(e.Scope), Name: e.Name}]; ok {
			q.HasUsage, q.UsedBytes, q.UsedAtUnix = true, u.Bytes, u.At
		}
		out.Quotas = append(out.Quotas, q)
	}
	sort.Slice(out.Quotas, func(i, j int) bool {
		a, b := out.Quotas[i], out.Quotas[j]
		if a.Scope != b.Scope {
			return a.Scope < b.Scope
		}
		return a.Name < b.Name
	})
	return out, nil
}
