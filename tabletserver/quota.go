package tabletserver

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/quota"
)

// Quotas (docs/OPERATIONS.md "Quotas"): the server's quota.Limiter,
// kept current from etcd by a quota.Follower in the work group, is
// consulted by two interceptors placed after the guard (the caller is
// known): a data call is admitted or refused whole before its handler
// runs, so a refused call has applied nothing. A read's bytes are known
// only once sent: the handlers charge them (chargeRead).

// startQuotas creates the limiter and, on a server with etcd, its
// follower; it returns the interceptors.
func (s *Server) startQuotas() (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	s.quotas = quota.NewLimiter(nil)
	if s.etcd != nil {
		f := &quota.Follower{Store: s.etcd, Layout: s.opts.layout(), Limiter: s.quotas, Log: s.logger, Held: s.heldByTable}
		s.work.run(f.Run)
	}
	var throttled *prometheus.CounterVec
	if s.metrics != nil {
		throttled = prometheus.NewCounterVec(prometheus.CounterOpts(ts("throttled_requests_total",
			"Data calls refused RESOURCE_EXHAUSTED by a quota, by the quota's scope (table, namespace, principal), name and limit.")),
			[]string{"scope", "name", "limit"})
		s.metrics.group.MustRegister(throttled)
	}
	refuse := func(err error) error {
		var r *quota.Refusal
		if throttled != nil && errors.As(err, &r) {
			throttled.WithLabelValues(string(r.Key.Scope), r.Key.Name, r.Limit).Inc()
		}
		return quota.Status(err)
	}
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !s.quotas.Active() {
			return handler(ctx, req) // no quota set: no Request built
		}
		if q, ok := quotaRequest(req); ok {
			q.Principal = auth.IdentityFrom(ctx).Name
			if err := s.quotas.Admit(q); err != nil {
				return nil, refuse(err)
			}
		}
		return handler(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if !s.quotas.Active() {
			return handler(srv, ss) // a quota set during the stream meters its next call
		}
		return handler(srv, &quotaStream{ServerStream: ss, s: s, refuse: refuse})
	}
	return unary, stream
}

// quotaStream admits a stream's request (ReadRows) when it is received.
type quotaStream struct {
	grpc.ServerStream
	s      *Server
	refuse func(error) error
}

func (st *quotaStream) RecvMsg(m any) error {
	if err := st.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if q, ok := quotaRequest(m); ok {
		q.Principal = auth.IdentityFrom(st.Context()).Name
		if err := st.s.quotas.Admit(q); err != nil {
			return st.refuse(err)
		}
	}
	return nil
}

// quotaRequest is what a data request costs (docs/CONTRACTS.md "Quotas"):
// a write counts one request per row it mutates and the bytes of its row
// keys and cells (the load meter's count: family, qualifier and value of
// each cell set; 8 for an aggregate input); a read counts one request per
// call, its bytes charged as they are sent. CheckAndMutateRow is a write
// that also counts one read request (its predicate reads the row; HBase
// meters checkAndMutate as one read and one write); ReadModifyWriteRow a
// write only (HBase's increment and append are mutations). SampleRowKeys
// is not metered: it reads no rows (the keys come from the tablet's
// index) and is what clients plan their scans with, like a location
// lookup. Calls that are not data calls are not metered.
func quotaRequest(req any) (quota.Request, bool) {
	switch r := req.(type) {
	case *tabulapb.MutateRowRequest:
		ms := r.GetMutations()
		return quota.Request{Write: true, Grows: grows(ms), Tables: []quota.Cost{{Table: r.GetTablet().GetTable(), Requests: 1,
			Bytes: int64(len(r.GetRowKey()) + mutationBytes(ms))}}}, true
	case *tabulapb.MutateRowsRequest:
		q := quota.Request{Write: true}
		at := map[string]int{}
		for _, e := range r.GetEntries() {
			t := e.GetTablet().GetTable()
			i, ok := at[t]
			if !ok {
				i = len(q.Tables)
				at[t] = i
				q.Tables = append(q.Tables, quota.Cost{Table: t})
			}
			q.Tables[i].Requests++
			q.Tables[i].Bytes += int64(len(e.GetRowKey()) + mutationBytes(e.GetMutations()))
			q.Grows = q.Grows || grows(e.GetMutations())
		}
		return q, true
	case *tabulapb.CheckAndMutateRowRequest:
		ms := append(append([]*tabulapb.Mutation(nil), r.GetTrueMutations()...), r.GetFalseMutations()...)
		return quota.Request{Write: true, Reads: true, Grows: grows(ms), Tables: []quota.Cost{{Table: r.GetTablet().GetTable(), Requests: 1,
			Bytes: int64(len(r.GetRowKey()) + mutationBytes(ms))}}}, true
	case *tabulapb.ReadModifyWriteRowRequest:
		return quota.Request{Write: true, Grows: true, Tables: []quota.Cost{{Table: r.GetTablet().GetTable(), Requests: 1,
			Bytes: int64(len(r.GetRowKey()) + 16*len(r.GetRules()))}}}, true
	case *tabulapb.IngestRowsRequest:
		// A bulk load's message: each row a request, its bytes as a
		// MutateRows entry's.
		c := quota.Cost{Table: r.GetTablet().GetTable(), Requests: int64(len(r.GetRows()))}
		for _, row := range r.GetRows() {
			c.Bytes += int64(len(row.GetKey()))
			for _, cl := range row.GetCells() {
				c.Bytes += int64(len(cl.GetFamily()) + len(cl.GetQualifier()) + len(cl.GetValue()))
			}
		}
		return quota.Request{Write: true, Grows: true, Tables: []quota.Cost{c}}, true
	case *tabulapb.ReadRowRequest:
		return quota.Request{Tables: []quota.Cost{{Table: r.GetTablet().GetTable(), Requests: 1}}}, true
	case *tabulapb.ReadRowsRequest:
		return quota.Request{Tables: []quota.Cost{{Table: r.GetTablet().GetTable(), Requests: 1}}}, true
	}
	return quota.Request{}, false
}

// grows says a mutation stores data: every kind but the deletions, which
// a table past its space quota still accepts (they are how it gets back
// under).
func grows(ms []*tabulapb.Mutation) bool {
	for _, m := range ms {
		if m.GetDeleteFromColumn() == nil && m.GetDeleteFromFamily() == nil && m.GetDeleteFromRow() == nil {
			return true
		}
	}
	return false
}

// chargeRead takes the bytes a read sent from its read-bytes quotas.
func (s *Server) chargeRead(ctx context.Context, table string, bytes int) {
	if !s.quotas.Active() {
		return
	}
	s.quotas.Charge(auth.IdentityFrom(ctx).Name, table, int64(bytes))
}

// heldByTable counts the tablets held, by table: the follower's shares.
func (s *Server) heldByTable() map[string]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]int{}
	for _, h := range s.tablets {
		out[h.table]++
	}
	return out
}

// Quotas lists the quotas this server enforces, with its shares and the
// published space usage (status pages, tests).
func (s *Server) Quotas() []quota.Info { return s.quotas.Quotas() }
