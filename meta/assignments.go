package meta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Each tablet server's own assignments (docs/CONTRACTS.md §4 "Each
// server's assignments").
//
// Every assigned tablet record, tablets/<table>/<id> naming server S, is
// mirrored under assignments/<S>/<table>/<id>: the same bytes, written in
// the same transaction, so the mirror's ModRevision is the record's. Every
// writer of a tablet record is a function of this package, and each one
// keeps the mirror in step (mirrorOps): a put of an assigned record puts
// its owner's mirror, a record that leaves S (moved, released, split,
// merged, deleted) deletes S's. A tablet server reads only its own mirrors
// at start (paged) and watches only its own prefix, so a change of another
// server's tablet costs it nothing: with 10^5 tablets on 10 servers a
// server hears of about a tenth of the changes, not all of them.
//
// A cluster upgraded in place has records without mirrors. The leading
// master fills them in (RepairAssignments) and then writes
// AssignmentsReadyKey; a tablet server that finds no such key reads and
// follows the whole of tablets/ as before, paged, and moves over to its
// own prefix when the key appears.

// DefaultPageSize is the number of keys a paged read asks for at once:
// about 400 KB of tablet records, well inside etcd's limits on a
// response however many tablets the cluster holds.
const DefaultPageSize = 1000

// ErrAssignmentsReady ends a tablet server's watch of the whole of
// tablets/ when AssignmentsReadyKey appears: read again, from its own
// assignments.
var ErrAssignmentsReady = errors.New("meta: every assigned tablet is mirrored under its server now")

// mirrorOps returns the operations that keep the mirrors of one tablet in
// step when its record goes from cur to next (nil: absent, before or
// after), next's value being nextValue.
func mirrorOps(l Layout, cur, next *TabletRecord, nextValue string) []clientv3.Op {
	var ops []clientv3.Op
	if cur != nil && cur.Server != "" && (next == nil || next.Server != cur.Server) {
		ops = append(ops, clientv3.OpDelete(l.AssignmentKey(cur.Server, cur.Table, cur.ID)))
	}
	if next != nil && next.Server != "" {
		ops = append(ops, clientv3.OpPut(l.AssignmentKey(next.Server, next.Table, next.ID), nextValue))
	}
	return ops
}

// readPaged reads [key, end) page by page (pageSize keys; 0 means
// DefaultPageSize), every page at revision rev (0: the first page's), and
// calls fn for each key in key order; it returns the revision.
func readPaged(ctx context.Context, kv clientv3.KV, key, end string, pageSize int, rev int64, fn func(*mvccpb.KeyValue)) (int64, error) {
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(int64(pageSize))}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := kv.Get(ctx, key, opts...)
		if err != nil {
			return 0, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, e := range resp.Kvs {
			fn(e)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// ReadServerTablets reads the tablets etcd assigns to server, page by page
// (pageSize keys; 0 means DefaultPageSize) at one revision, which it
// returns. indexed says whether they came from the server's own mirrors;
// without AssignmentsReadyKey they come from the whole of tablets/, of
// which only the records naming server are kept. Values that do not
// decode are left out: a server acts only on records it understands.
func ReadServerTablets(ctx context.Context, kv clientv3.KV, l Layout, server string, pageSize int) (tablets []VersionedTablet, rev int64, indexed bool, err error) {
	resp, err := kv.Get(ctx, l.AssignmentsReadyKey())
	if err != nil {
		return nil, 0, false, fmt.Errorf("meta: reading the tablets of server %s: %w", server, err)
	}
	rev, indexed = resp.Header.Revision, len(resp.Kvs) > 0
	prefix := l.AllTabletsPrefix()
	if indexed {
		prefix = l.ServerAssignmentsPrefix(server)
	}
	_, err = readPaged(ctx, kv, prefix, clientv3.GetPrefixRangeEnd(prefix), pageSize, rev, func(e *mvccpb.KeyValue) {
		table, id, ok := tableAndTablet(string(e.Key), prefix)
		if !indexed {
			table, id, ok = l.TabletFromKey(string(e.Key))
		}
		rec, err := DecodeTablet(e.Value)
		if !ok || err != nil || rec.Server != server {
			return
		}
		rec.Table, rec.ID = table, id
		tablets = append(tablets, VersionedTablet{TabletRecord: rec, ModRevision: e.ModRevision})
	})
	if err != nil {
		return nil, 0, false, fmt.Errorf("meta: reading the tablets of server %s: %w", server, err)
	}
	return tablets, rev, indexed, nil
}

// TabletEvent is one change of a tablet a server follows: its record (or
// mirror) put or deleted. The record is decoded on demand (Record), so
// that a watcher of the whole of tablets/ decodes only the tablets it
// holds.
type TabletEvent struct {
	Table, ID string
	// Deleted: the key is gone. For a mirror, the tablet is no longer
	// assigned to the server (moved, released, split, merged or deleted).
	Deleted bool
	value   []byte // the record put, unless Deleted
}

// Record decodes the record the event put; an error for a deletion or a
// value that is not a tablet record.
func (e TabletEvent) Record() (TabletRecord, error) {
	if e.Deleted {
		return TabletRecord{}, fmt.Errorf("meta: tablet %s/%s was deleted", e.Table, e.ID)
	}
	return DecodeTablet(e.value)
}

// FollowServerTablets watches, from revision rev, what ReadServerTablets
// read: server's own mirrors when indexed, else every key under tablets/
// and AssignmentsReadyKey, whose appearance ends the watch with
// ErrAssignmentsReady. It calls fn for each change of a tablet key, in
// order, on the caller's goroutine, until the watch ends: it returns the
// watch's error, fn's, or ctx's once ctx is done. The watch requires an
// etcd leader, so that a member cut off from the cluster ends it rather
// than stay silent.
func FollowServerTablets(ctx context.Context, w clientv3.Watcher, l Layout, server string, rev int64, indexed bool, fn func(TabletEvent) error) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	prefix := l.AllTabletsPrefix()
	if indexed {
		prefix = l.ServerAssignmentsPrefix(server)
	}
	tablets := w.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev))
	var ready clientv3.WatchChan // nil when indexed: never ready
	if !indexed {
		ready = w.Watch(wctx, l.AssignmentsReadyKey(), clientv3.WithRev(rev), clientv3.WithFilterDelete())
	}
	for {
		var wr clientv3.WatchResponse
		var ok bool
		select {
		case wr, ok = <-tablets:
		case wr, ok = <-ready:
			if ok && wr.Err() == nil && len(wr.Events) > 0 {
				return ErrAssignmentsReady
			}
		}
		if !ok {
			return ctx.Err()
		}
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			table, id, ok := tableAndTablet(string(ev.Kv.Key), prefix)
			if !ok {
				continue
			}
			e := TabletEvent{Table: table, ID: id, Deleted: ev.Type != clientv3.EventTypePut}
			if !e.Deleted {
				e.value = ev.Kv.Value
			}
			if err := fn(e); err != nil {
				return err
			}
		}
	}
}

// repairBatch is how many tablets one transaction of RepairAssignments
// repairs: a compare and two operations each, under etcd's default
// --max-txn-ops of 128.
const repairBatch = 60

// RepairAssignments makes every assigned tablet's mirror exact (a cluster
// upgraded in place has none; a crash or an older binary can leave one
// stale) and then writes AssignmentsReadyKey, all guarded by g (the
// leader's term). Nothing is done when the key exists. It reads
// tablets/ and assignments/ page by page at one revision, then in
// transactions of up to 60 tablets each: rewrites each assigned record
// whose mirror is missing or differs as it is, with its mirror beside it,
// guarded by the record's ModRevision (so both get one ModRevision, and a
// record changed meanwhile is left to the writer that changed it), and
// deletes each mirror whose record no longer names its server, guarded by
// both keys' ModRevisions. A pass in which a guard failed is run again
// (at most 5 passes). It returns how many keys it repaired.
func RepairAssignments(ctx context.Context, kv clientv3.KV, l Layout, pageSize int, g Guard) (int, error) {
	repaired := 0
	for pass := 0; pass < 5; pass++ {
		resp, err := kv.Get(ctx, l.AssignmentsReadyKey())
		if err != nil {
			return repaired, fmt.Errorf("meta: repairing assignments: %w", err)
		}
		if len(resp.Kvs) > 0 {
			return repaired, nil
		}
		fixes, err := readRepairs(ctx, kv, l, pageSize, resp.Header.Revision)
		if err != nil {
			return repaired, err
		}
		conflicts := 0
		for len(fixes) > 0 {
			n := min(len(fixes), repairBatch)
			var guards []clientv3.Cmp
			var ops []clientv3.Op
			for _, f := range fixes[:n] {
				guards = append(guards, f.guards...)
				ops = append(ops, f.ops...)
			}
			fixes = fixes[n:]
			resp, err := kv.Txn(ctx).If(cmps(guards, g)...).Then(ops...).Commit()
			if err != nil {
				return repaired, fmt.Errorf("meta: repairing assignments: %w", err)
			}
			if !resp.Succeeded {
				if err := CheckGuard(ctx, kv, g); err != nil {
					return repaired, err
				}
				conflicts++
				continue
			}
			repaired += n
		}
		if conflicts > 0 {
			continue
		}
		r, err := kv.Txn(ctx).If(cmps(nil, g)...).Then(clientv3.OpPut(l.AssignmentsReadyKey(), "1")).Commit()
		if err != nil {
			return repaired, fmt.Errorf("meta: marking the assignments ready: %w", err)
		}
		if !r.Succeeded {
			return repaired, fmt.Errorf("%w: the guard no longer holds", ErrConflict)
		}
		return repaired, nil
	}
	return repaired, fmt.Errorf("%w: tablets kept changing while their assignments were repaired", ErrConflict)
}

// repair is one tablet's fix: its guards and operations.
type repair struct {
	guards []clientv3.Cmp
	ops    []clientv3.Op
}

// readRepairs reads tablets/ and assignments/ at rev and returns what
// RepairAssignments must write.
func readRepairs(ctx context.Context, kv clientv3.KV, l Layout, pageSize int, rev int64) ([]repair, error) {
	type version struct {
		value  []byte
		modRev int64
	}
	mirrors := map[string]version{}
	ap := l.AssignmentsPrefix()
	if _, err := readPaged(ctx, kv, ap, clientv3.GetPrefixRangeEnd(ap), pageSize, rev, func(e *mvccpb.KeyValue) {
		mirrors[string(e.Key)] = version{e.Value, e.ModRevision}
	}); err != nil {
		return nil, fmt.Errorf("meta: reading the assignments: %w", err)
	}
	var fixes []repair
	records := map[string]int64{} // mirror key → the ModRevision of the record naming its server
	tp := l.AllTabletsPrefix()
	if _, err := readPaged(ctx, kv, tp, clientv3.GetPrefixRangeEnd(tp), pageSize, rev, func(e *mvccpb.KeyValue) {
		table, id, ok := l.TabletFromKey(string(e.Key))
		rec, err := DecodeTablet(e.Value)
		if !ok || err != nil || rec.Server == "" {
			return
		}
		mk := l.AssignmentKey(rec.Server, table, id)
		records[mk] = e.ModRevision
		if m, ok := mirrors[mk]; ok && m.modRev == e.ModRevision && bytes.Equal(m.value, e.Value) {
			return
		}
		fixes = append(fixes, repair{
			guards: []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(string(e.Key)), "=", e.ModRevision)},
			ops:    []clientv3.Op{touch(string(e.Key)), clientv3.OpPut(mk, string(e.Value))},
		})
	}); err != nil {
		return nil, fmt.Errorf("meta: reading the tablets: %w", err)
	}
	for mk, m := range mirrors {
		if _, ok := records[mk]; ok {
			continue
		}
		// The record does not name this server (or is gone): it must
		// still not when the mirror goes.
		guards := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(mk), "=", m.modRev)}
		if _, tablet, ok := strings.Cut(strings.TrimPrefix(mk, ap), "/"); ok {
			guards = append(guards, clientv3.Compare(clientv3.ModRevision(tp+tablet), "<", rev+1))
		}
		fixes = append(fixes, repair{guards: guards, ops: []clientv3.Op{clientv3.OpDelete(mk)}})
	}
	return fixes, nil
}
