// Package quota owns Tabula's request, bandwidth and space quotas
// (docs/OPERATIONS.md "Quotas"; the etcd records are meta's, under
// quotas/). A quota limits a table, a namespace or a principal; each
// tablet server enforces its share of every limit with token buckets
// (Bucket) held by a Limiter, which a Follower keeps current from etcd.
// The leading master publishes the stored size of every table and
// namespace with a space quota (Usage), which the servers compare with
// the limit.
//
// A refusal is an error (*Refusal) the tablet server turns into
// RESOURCE_EXHAUSTED with a google.rpc.RetryInfo detail (Status): the
// request was refused before anything of it was applied, so it is safe
// to send again after the delay, whatever it was.
//
//	lim := quota.NewLimiter(nil)
//	lim.Set(quota.Key{Scope: quota.Table, Name: "events"}, meta.QuotaRecord{WriteRequests: 100})
//	if err := lim.Admit(quota.Request{Principal: "etl", Write: true, Tables: []quota.Cost{{Table: "events", Requests: 1, Bytes: 512}}}); err != nil {
//		return quota.Status(err) // RESOURCE_EXHAUSTED naming the quota, with RetryInfo
//	}
package quota
