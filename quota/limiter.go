package quota

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// Scope is what a quota limits.
type Scope string

// The scopes of a quota (the <scope> of its etcd key).
const (
	Table     Scope = "table"
	Namespace Scope = "namespace"
	Principal Scope = "principal"
)

// ParseScope checks a scope's name.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case Table, Namespace, Principal:
		return Scope(s), nil
	}
	return "", fmt.Errorf("quota: unknown scope %q: want table, namespace or principal", s)
}

// Key names one quota.
type Key struct {
	Scope Scope
	Name  string
}

func (k Key) String() string { return string(k.Scope) + " " + k.Name }

// The limits of a quota, as they are named in refusals, metrics and the
// CLI.
const (
	ReadRequests  = "read_requests"
	ReadBytes     = "read_bytes"
	WriteRequests = "write_requests"
	WriteBytes    = "write_bytes"
	SpaceBytes    = "space_bytes"
)

// dims are the rate limits in the order of limit.buckets.
var dims = [4]string{ReadRequests, ReadBytes, WriteRequests, WriteBytes}

func rates(r meta.QuotaRecord) [4]float64 {
	return [4]float64{r.ReadRequests, r.ReadBytes, r.WriteRequests, r.WriteBytes}
}

// SpaceRetryDelay is the delay a space refusal asks for: about the
// master's load interval, after which a new size may have been published.
const SpaceRetryDelay = 10 * time.Second

// limit is one quota as this server enforces it. Its mutex guards the
// fields below it: calls that meet different quotas never wait for each
// other.
type limit struct {
	id uint64 // creation order: requests lock several limits in this order

	mu      sync.Mutex
	rec     meta.QuotaRecord
	share   float64    // of the cluster-wide rates, in (0, 1]
	buckets [4]*Bucket // by dims; nil where there is no limit
	usage   int64      // stored bytes, for a space quota
	used    bool       // usage was published
}

// Limiter holds the quotas a server enforces and their buckets. Its
// methods are safe for concurrent use; Admit and Charge of a nil Limiter
// do nothing.
//
// The data path takes no lock of its own: Admit and Charge read an
// immutable map of the quotas (an atomic pointer, replaced whole when a
// quota is added or removed, which is rare) and lock only the quotas the
// call meets. A call that meets no quota (the unthrottled caller beside a
// throttled one) locks nothing.
type Limiter struct {
	now func() time.Time
	// some says a rate or space quota exists: without one, Admit and
	// Charge return at once.
	some atomic.Bool
	// quotas is the current map; never changed once stored.
	quotas atomic.Pointer[map[Key]*limit]

	mu     sync.Mutex // serializes the writers of quotas
	nextID uint64     // under mu
}

// NewLimiter returns a limiter without quotas; now is its clock (nil:
// time.Now).
func NewLimiter(now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	l := &Limiter{now: now}
	l.quotas.Store(&map[Key]*limit{})
	return l
}

func (l *Limiter) get(k Key) *limit { return (*l.quotas.Load())[k] }

// Set installs or replaces the limits of k, keeping its share, usage and
// the tokens of its buckets.
func (l *Limiter) Set(k Key, r meta.QuotaRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.get(k)
	if q == nil {
		l.nextID++
		q = &limit{id: l.nextID, share: 1}
		old := *l.quotas.Load()
		m := make(map[Key]*limit, len(old)+1)
		maps.Copy(m, old)
		m[k] = q
		q.mu.Lock() // published below; set before any call can lock it
		l.quotas.Store(&m)
	} else {
		q.mu.Lock()
	}
	q.rec = r
	l.rebucketLocked(q)
	q.mu.Unlock()
	l.some.Store(true)
}

// Remove drops the quota of k.
func (l *Limiter) Remove(k Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := *l.quotas.Load()
	if old[k] == nil {
		return
	}
	m := maps.Clone(old)
	delete(m, k)
	l.quotas.Store(&m)
	l.some.Store(len(m) > 0)
}

// SetShare sets the part of k's cluster-wide rates this server enforces.
func (l *Limiter) SetShare(k Key, share float64) {
	share = min(max(share, 1e-6), 1)
	if q := l.get(k); q != nil {
		q.mu.Lock()
		if q.share != share {
			q.share = share
			l.rebucketLocked(q)
		}
		q.mu.Unlock()
	}
}

// SetUsage records the stored bytes of k (a table or namespace).
func (l *Limiter) SetUsage(k Key, bytes int64) {
	if q := l.get(k); q != nil {
		q.mu.Lock()
		q.usage, q.used = bytes, true
		q.mu.Unlock()
	}
}

// rebucketLocked makes q's buckets follow its record and share; q.mu is
// held.
func (l *Limiter) rebucketLocked(q *limit) {
	now := l.now()
	for i, r := range rates(q.rec) {
		switch {
		case r <= 0:
			q.buckets[i] = nil
		case q.buckets[i] == nil:
			q.buckets[i] = NewBucket(r*q.share, now)
		default:
			q.buckets[i].SetRate(r*q.share, now)
		}
	}
}

// Cost is what a request asks of one table: rows (a write's entries, a
// read's calls) and bytes (a write's cells; a read's bytes are charged
// afterwards with Charge).
type Cost struct {
	Table    string
	Requests int64
	Bytes    int64
}

// Request is one call to admit.
type Request struct {
	// Principal is the caller ("" when the cluster runs without auth: no
	// principal quota applies).
	Principal string
	Write     bool
	// Grows says a write stores data (it sets cells): a table or
	// namespace past its space quota refuses it. Deletions do not grow.
	Grows bool
	// Reads says a write reads the row first (CheckAndMutateRow's
	// predicate): it also counts as a read request, and waits out a
	// read-bytes debt as a read does, as HBase meters checkAndMutate (one
	// read and one write).
	Reads  bool
	Tables []Cost
}

// Refusal is the error of a request a quota refused: nothing of the
// request was applied.
type Refusal struct {
	Key   Key
	Limit string  // ReadRequests, ..., SpaceBytes
	Value float64 // the cluster-wide limit
	Share float64 // this server's share of it
	Used  int64   // a space quota's published usage
	Delay time.Duration
}

func (r *Refusal) Error() string {
	if r.Limit == SpaceBytes {
		return fmt.Sprintf("quota: %s is past its space quota (space_bytes %.0f; %d bytes stored): writes that store data are refused until deletes and a compaction bring it under; retry in %s",
			r.Key, r.Value, r.Used, r.Delay)
	}
	return fmt.Sprintf("quota: %s is over its %s quota (%g/s across the cluster, %.3g/s on this server); retry in %s",
		r.Key, r.Limit, r.Value, r.Value*r.Share, r.Delay)
}

type charge struct {
	q    *limit
	key  Key
	i    int // into dims
	cost float64
}

// Active reports whether any quota is set: callers skip building a
// Request (allocations on every data call) when none is.
func (l *Limiter) Active() bool { return l != nil && l.some.Load() }

// Admit lets req in, taking its costs from every bucket it meets (its
// tables', their namespaces', its principal's), or refuses it with the
// *Refusal of the longest wait, taking nothing.
func (l *Limiter) Admit(req Request) error {
	if l == nil || !l.some.Load() {
		return nil
	}
	quotas := *l.quotas.Load()
	// The quotas the request meets, each once, locked in id order (so
	// that two requests meeting the same quotas cannot deadlock) and all
	// at once (so that a refusal takes nothing from any of them).
	var metBuf [8]met
	mets := metBuf[:0]
	var total Cost
	for i, c := range req.Tables {
		total.Requests += c.Requests
		total.Bytes += c.Bytes
		for _, k := range [2]Key{{Table, c.Table}, {Namespace, NamespaceOf(c.Table)}} {
			if q := quotas[k]; q != nil {
				mets = append(mets, met{q: q, key: k, cost: i})
			}
		}
	}
	if req.Principal != "" {
		k := Key{Principal, req.Principal}
		if q := quotas[k]; q != nil {
			mets = append(mets, met{q: q, key: k, cost: -1})
		}
	}
	if len(mets) == 0 {
		return nil
	}
	if len(mets) > 1 {
		slices.SortFunc(mets, func(a, b met) int { return cmp.Compare(a.q.id, b.q.id) })
	}
	for i, m := range mets {
		if i == 0 || mets[i-1].q != m.q {
			m.q.mu.Lock()
		}
	}
	defer func() {
		for i, m := range mets {
			if i == 0 || mets[i-1].q != m.q {
				m.q.mu.Unlock()
			}
		}
	}()
	now := l.now()
	var chargeBuf [16]charge
	charges := chargeBuf[:0]
	var worst *Refusal
	for _, m := range mets {
		q, k := m.q, m.key
		c := total
		if m.cost >= 0 {
			c = req.Tables[m.cost]
			if req.Write && req.Grows && q.rec.SpaceBytes > 0 && q.used && q.usage >= q.rec.SpaceBytes {
				worst = longer(worst, &Refusal{Key: k, Limit: SpaceBytes, Value: float64(q.rec.SpaceBytes), Share: 1, Used: q.usage, Delay: SpaceRetryDelay})
			}
		}
		charges = appendCharges(charges, q, k, req.Write, c)
		if req.Write && req.Reads {
			charges = appendCharges(charges, q, k, false, c)
		}
	}
	for _, ch := range charges {
		b := ch.q.buckets[ch.i]
		if d := b.Wait(now, ch.cost); d > 0 {
			worst = longer(worst, &Refusal{Key: ch.key, Limit: dims[ch.i], Value: rates(ch.q.rec)[ch.i], Share: ch.q.share, Delay: b.Refuse(now, ch.cost, d)})
		}
	}
	if worst != nil {
		return worst
	}
	for _, ch := range charges {
		ch.q.buckets[ch.i].Take(ch.cost)
	}
	return nil
}

// met is a quota a request meets, with the cost it is charged: the
// index of a table's Cost in Request.Tables, or -1 for the request's
// total (a principal's quota).
type met struct {
	q    *limit
	key  Key
	cost int
}

// appendCharges adds c's costs against q's buckets: requests and bytes
// of a write; requests of a read, and its bytes bucket's debt (cost 0:
// Charge takes the bytes once they are known).
func appendCharges(out []charge, q *limit, k Key, write bool, c Cost) []charge {
	req, bytes := 0, 1
	cost := float64(0)
	if write {
		req, bytes, cost = 2, 3, float64(c.Bytes)
	}
	if q.buckets[req] != nil {
		out = append(out, charge{q, k, req, float64(c.Requests)})
	}
	if q.buckets[bytes] != nil {
		out = append(out, charge{q, k, bytes, cost})
	}
	return out
}

func longer(a, b *Refusal) *Refusal {
	if a == nil || b.Delay > a.Delay {
		return b
	}
	return a
}

// Charge takes the bytes a read of table returned from the read-bytes
// buckets of the table, its namespace and principal, whatever they hold:
// a debt makes the next reads wait.
func (l *Limiter) Charge(principal, table string, bytes int64) {
	if l == nil || !l.some.Load() || bytes <= 0 {
		return
	}
	quotas := *l.quotas.Load()
	for _, k := range [3]Key{{Table, table}, {Namespace, NamespaceOf(table)}, {Principal, principal}} {
		if q := quotas[k]; q != nil && k.Name != "" {
			q.mu.Lock()
			if q.buckets[1] != nil {
				q.buckets[1].Charge(l.now(), float64(bytes))
			}
			q.mu.Unlock()
		}
	}
}

// Info is a quota as a server enforces it, for status pages and tests.
type Info struct {
	Key    Key
	Limits meta.QuotaRecord
	Share  float64
	Usage  int64 // -1 when no usage was published
}

// Quotas lists the quotas held, sorted by key.
func (l *Limiter) Quotas() []Info {
	if l == nil {
		return nil
	}
	quotas := *l.quotas.Load()
	out := make([]Info, 0, len(quotas))
	for k, q := range quotas {
		q.mu.Lock()
		in := Info{Key: k, Limits: q.rec, Share: q.share, Usage: -1}
		if q.used {
			in.Usage = q.usage
		}
		q.mu.Unlock()
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key.Scope != out[j].Key.Scope {
			return out[i].Key.Scope < out[j].Key.Scope
		}
		return out[i].Key.Name < out[j].Key.Name
	})
	return out
}

// ValidateLimits checks a quota's limits before they are stored: rates
// and sizes finite and not negative, at least one set, and a space limit
// only on a table or namespace (a principal stores nothing of its own).
// The errors wrap cell.ErrInvalid and say what to do instead.
func ValidateLimits(k Key, r meta.QuotaRecord) error {
	for i, v := range rates(r) {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return cell.Invalidf("quota %s: %s %g is not a rate: give a finite number >= 0 a second (0 or unset: no limit)", k, dims[i], v)
		}
	}
	if r.SpaceBytes < 0 {
		return cell.Invalidf("quota %s: %s %d is negative: give a size >= 0 (0 or unset: no limit)", k, SpaceBytes, r.SpaceBytes)
	}
	if r == (meta.QuotaRecord{}) {
		return cell.Invalidf("quota %s: no limit given: set at least one of %s, %s, %s, %s, %s; to drop a quota, remove it", k, ReadRequests, ReadBytes, WriteRequests, WriteBytes, SpaceBytes)
	}
	if r.SpaceBytes > 0 && k.Scope == Principal {
		return cell.Invalidf("quota %s: %s applies to tables and namespaces, not principals: limit the namespace or tables the principal writes", k, SpaceBytes)
	}
	return nil
}
