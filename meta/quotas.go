package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Quotas of the quota package (docs/OPERATIONS.md "Quotas"), under the
// cluster's prefix:
//
//	quotas/limits/<scope>/<name>  QuotaRecord: {"read_requests":..,"read_bytes":..,"write_requests":..,"write_bytes":..,"space_bytes":..}
//	quotas/usage/<scope>/<name>   UsageRecord: {"bytes":..,"at":..}, written by the leading master
//
// <scope> is "table", "namespace" or "principal"; <name> is the table,
// namespace or principal it limits. meta stores and reads them; what they
// mean (token buckets, shares, refusals) is the quota package's.

// QuotaRecord is the value of quotas/limits/<scope>/<name>. A zero field
// is no limit. Rates are per second of the whole cluster.
type QuotaRecord struct {
	ReadRequests  float64 `json:"read_requests,omitempty"`
	ReadBytes     float64 `json:"read_bytes,omitempty"`
	WriteRequests float64 `json:"write_requests,omitempty"`
	WriteBytes    float64 `json:"write_bytes,omitempty"`
	SpaceBytes    int64   `json:"space_bytes,omitempty"`
}

// UsageRecord is the value of quotas/usage/<scope>/<name>: the stored
// bytes of a table or namespace with a space quota, as the master's last
// load report summed them.
type UsageRecord struct {
	Bytes int64 `json:"bytes"`
	At    int64 `json:"at"` // unix seconds of the load report
}

// QuotaEntry is one key under quotas/, read or changed: a limit
// (IsUsage false) or a usage record, with the scope and name its key
// names.
type QuotaEntry struct {
	Scope, Name string
	IsUsage     bool
	Limits      QuotaRecord
	Usage       UsageRecord
	// Deleted is set for a watch's delete.
	Deleted bool
	// Err is set when a put's key or value does not decode.
	Err error
}

// QuotasPrefix holds both limits and usage.
func (l Layout) QuotasPrefix() string { return l.root() + "quotas/" }

// QuotaKey is the key of the limits of scope/name.
func (l Layout) QuotaKey(scope, name string) string {
	return l.QuotasPrefix() + "limits/" + scope + "/" + name
}

// QuotaUsageKey is the key of the usage of scope/name.
func (l Layout) QuotaUsageKey(scope, name string) string {
	return l.QuotasPrefix() + "usage/" + scope + "/" + name
}

// DecodeQuota parses a key and value under QuotasPrefix.
func DecodeQuota(l Layout, key, value []byte, deleted bool) QuotaEntry {
	rest, _ := strings.CutPrefix(string(key), l.QuotasPrefix())
	kind, rest, _ := strings.Cut(rest, "/")
	scope, name, ok := strings.Cut(rest, "/")
	e := QuotaEntry{Scope: scope, Name: name, IsUsage: kind == "usage", Deleted: deleted}
	if !ok || scope == "" || name == "" || (kind != "usage" && kind != "limits") {
		e.Err = fmt.Errorf("meta: quota key %q is not quotas/limits|usage/<scope>/<name>", key)
		return e
	}
	if deleted {
		return e
	}
	var err error
	if e.IsUsage {
		err = json.Unmarshal(value, &e.Usage)
	} else {
		err = json.Unmarshal(value, &e.Limits)
	}
	if err != nil {
		e.Err = fmt.Errorf("meta: quota record %s: %w", key, err)
	}
	return e
}

// PutQuota writes the limits of scope/name, replacing those there, if
// every guard holds (the master passes its term's LeaderGuard); else
// ErrConflict.
func PutQuota(ctx context.Context, kv clientv3.KV, l Layout, scope, name string, r QuotaRecord, guards ...Guard) error {
	resp, err := kv.Txn(ctx).If(cmps(nil, guards...)...).Then(clientv3.OpPut(l.QuotaKey(scope, name), mustJSON(r))).Commit()
	if err != nil {
		return fmt.Errorf("meta: writing the quota of %s %s: %w", scope, name, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: writing the quota of %s %s: the guard no longer holds", ErrConflict, scope, name)
	}
	return nil
}

// DeleteQuota deletes the limits of scope/name and their usage if every
// guard holds (else ErrConflict); ErrNotFound if there were no limits.
func DeleteQuota(ctx context.Context, kv clientv3.KV, l Layout, scope, name string, guards ...Guard) error {
	resp, err := kv.Txn(ctx).If(cmps(nil, guards...)...).Then(clientv3.OpDelete(l.QuotaKey(scope, name)), clientv3.OpDelete(l.QuotaUsageKey(scope, name))).Commit()
	if err != nil {
		return fmt.Errorf("meta: deleting the quota of %s %s: %w", scope, name, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: deleting the quota of %s %s: the guard no longer holds", ErrConflict, scope, name)
	}
	if resp.Responses[0].GetResponseDeleteRange().Deleted == 0 {
		return fmt.Errorf("%w: quota of %s %s", ErrNotFound, scope, name)
	}
	return nil
}

// PutQuotaUsage writes the usage of scope/name.
func PutQuotaUsage(ctx context.Context, kv clientv3.KV, l Layout, scope, name string, r UsageRecord) error {
	if _, err := kv.Put(ctx, l.QuotaUsageKey(scope, name), mustJSON(r)); err != nil {
		return fmt.Errorf("meta: writing the usage of %s %s: %w", scope, name, err)
	}
	return nil
}

// LoadQuotas reads every key under quotas/, decoded, with the revision
// of the read.
func LoadQuotas(ctx context.Context, kv clientv3.KV, l Layout) ([]QuotaEntry, int64, error) {
	return loadDecoded(ctx, kv, l.QuotasPrefix(), "quotas", func(key, value []byte) QuotaEntry {
		return DecodeQuota(l, key, value, false)
	})
}

// WatchQuotas follows quotas/ from revision from (requiring an etcd
// leader), one etcd answer at a time, until ctx ends or the watch fails
// (then it just ends: the caller loads again).
func WatchQuotas(ctx context.Context, w clientv3.Watcher, l Layout, from int64) iter.Seq[[]QuotaEntry] {
	return watchDecoded(ctx, w, l.QuotasPrefix(), from, func(ev *clientv3.Event) QuotaEntry {
		return DecodeQuota(l, ev.Kv.Key, ev.Kv.Value, ev.Type == clientv3.EventTypeDelete)
	})
}

// CountKeys counts the keys under each prefix, without reading them
// (etcd's count-only ranges), at one revision per 100 prefixes (a
// transaction each: etcd's default limit is 128 operations): the tablets
// of a table (TabletsPrefix), of a namespace ("tablets/NS:") or the live
// servers (ServersPrefix), for the quota package's shares. etcd walks its
// in-memory index over each range and answers a count: no key or value
// crosses the network.
func CountKeys(ctx context.Context, kv clientv3.KV, prefixes ...string) ([]int64, error) {
	const perTxn = 100
	out := make([]int64, 0, len(prefixes))
	for start := 0; start < len(prefixes); start += perTxn {
		chunk := prefixes[start:min(start+perTxn, len(prefixes))]
		ops := make([]clientv3.Op, len(chunk))
		for i, p := range chunk {
			ops[i] = clientv3.OpGet(p, clientv3.WithPrefix(), clientv3.WithCountOnly())
		}
		resp, err := kv.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, fmt.Errorf("meta: counting keys under %d prefixes (%s...): %w", len(chunk), chunk[0], err)
		}
		for _, r := range resp.Responses {
			out = append(out, r.GetResponseRange().GetCount())
		}
	}
	return out, nil
}

// NamespaceTabletsPrefix is the prefix of the tablets of every table of
// namespace ns (not "default", whose tables share no prefix): tables
// there are named "ns:NAME", and no namespace's name holds a colon.
func (l Layout) NamespaceTabletsPrefix(ns string) string { return l.AllTabletsPrefix() + ns + ":" }

// CountDefaultNamespaceTablets counts the tablets of the default
// namespace's tables, which share no key prefix, without reading a tablet
// key: every tablet less those of each created namespace, in one
// keys-only read of the namespace records (one key per namespace) and
// count-only ranges (CountKeys). At 10^5 tablets that is a few hundred
// bytes on the wire, not every tablet key.
func CountDefaultNamespaceTablets(ctx context.Context, kv clientv3.KV, l Layout) (int64, error) {
	resp, err := kv.Get(ctx, l.NamespacesPrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, fmt.Errorf("meta: reading the namespace names: %w", err)
	}
	prefixes := []string{l.AllTabletsPrefix()}
	for _, e := range resp.Kvs {
		if ns, ok := strings.CutPrefix(string(e.Key), l.NamespacesPrefix()); ok && ns != "" && !strings.Contains(ns, ":") {
			prefixes = append(prefixes, l.NamespaceTabletsPrefix(ns))
		}
	}
	counts, err := CountKeys(ctx, kv, prefixes...)
	if err != nil {
		return 0, err
	}
	n := counts[0]
	for _, c := range counts[1:] {
		n -= c
	}
	return max(n, 0), nil
}
