package meta

import (
	"context"
	"fmt"
	"iter"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The table map is tables/ and tablets/: every schema and every tablet.
// The master keeps it in memory (master/index.go): read page by page at
// one revision (ReadTableMap), then followed by a watch from the next
// revision (MapWatcher).

// MapKind says what a key of the table map names.
type MapKind int

const (
	// MapOther is a key inside the map's span that names neither a table
	// nor a tablet.
	MapOther MapKind = iota
	// MapTable is tables/<name>.
	MapTable
	// MapTablet is tablets/<table>/<id>.
	MapTablet
)

// MapEntry is one key of the table map, read or changed, decoded.
type MapEntry struct {
	Key  string
	Kind MapKind
	// Name is the table the key names (MapTable, MapTablet); ID the tablet
	// (MapTablet).
	Name, ID string
	// Deleted is set for a watch's delete; nothing below is then set.
	Deleted bool
	// ModRevision is the revision of the put or delete.
	ModRevision int64
	// Table is the decoded schema of a MapTable put.
	Table TableRecord
	// Tablet is the decoded record of a MapTablet put, its Table and ID
	// taken from the key (a record naming another tablet is not trusted).
	Tablet VersionedTablet
	// Err is set when a put's value does not decode.
	Err error
}

// mapSpan is the key range [start, end) holding tables/ and tablets/ and
// nothing else of the layout ("tables/" sorts just below "tablets/").
func mapSpan(l Layout) (start, end string) {
	return l.TablesPrefix(), clientv3.GetPrefixRangeEnd(l.AllTabletsPrefix())
}

func mapEntry(l Layout, key, value []byte, modRev int64, deleted bool) MapEntry {
	e := MapEntry{Key: string(key), Deleted: deleted, ModRevision: modRev}
	if name, ok := l.TableFromKey(e.Key); ok {
		e.Kind, e.Name = MapTable, name
		if !deleted {
			e.Table, e.Err = DecodeTable(value)
		}
		return e
	}
	table, id, ok := l.TabletFromKey(e.Key)
	if !ok {
		return e
	}
	e.Kind, e.Name, e.ID = MapTablet, table, id
	if !deleted {
		var r TabletRecord
		if r, e.Err = DecodeTablet(value); e.Err == nil {
			r.Table, r.ID = table, id
			e.Tablet = VersionedTablet{TabletRecord: r, ModRevision: modRev}
		}
	}
	return e
}

// ReadTableMap reads the table map page by page (pageSize keys a page),
// every page at the revision of the first, calling fn for each key in
// key order; it returns that revision.
func ReadTableMap(ctx context.Context, kv clientv3.KV, l Layout, pageSize int, fn func(MapEntry)) (int64, error) {
	key, end := mapSpan(l)
	rev, err := readPaged(ctx, kv, key, end, pageSize, 0, func(e *mvccpb.KeyValue) {
		fn(mapEntry(l, e.Key, e.Value, e.ModRevision, false))
	})
	if err != nil {
		return 0, fmt.Errorf("meta: reading the table map: %w", err)
	}
	return rev, nil
}

// MapWatcher follows the table map on a watcher of its own, so that its
// progress requests reach only its stream.
type MapWatcher struct {
	w clientv3.Watcher
	// own is set when w was opened here, so Close closes it; a store's
	// own watcher is the store's (closing the twin's would close the twin).
	own bool
	l   Layout
}

// MapChange is one answer of a MapWatcher's watch: the changes of one
// etcd answer (a transaction's changes arrive together), or a progress
// notification, or the error that ended the watch.
type MapChange struct {
	Entries []MapEntry
	// Progress marks a progress notification: every change up to Rev was
	// delivered.
	Progress bool
	// Rev is the revision of etcd's answer.
	Rev int64
	// Err ended the watch (e.g. etcd compacted the revision it needed).
	Err error
}

// NewMapWatcher opens a watcher of its own on s when s is an etcd client
// (a twin's watcher is used as it is, and left open by Close). Close it
// when done.
func NewMapWatcher(s Store, l Layout) *MapWatcher {
	if c, ok := s.(*clientv3.Client); ok {
		return &MapWatcher{w: clientv3.NewWatcher(c), own: true, l: l}
	}
	return &MapWatcher{w: s, l: l}
}

// Watch follows the table map from revision from (requiring an etcd
// leader) until ctx ends or the watch fails; a failure is the last
// change, with Err set.
func (mw *MapWatcher) Watch(ctx context.Context, from int64) iter.Seq[MapChange] {
	return func(yield func(MapChange) bool) {
		start, end := mapSpan(mw.l)
		ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		defer cancel()
		for resp := range mw.w.Watch(ctx, start, clientv3.WithRange(end), clientv3.WithRev(from)) {
			if err := resp.Err(); err != nil {
				yield(MapChange{Err: err, Rev: resp.Header.Revision})
				return
			}
			c := MapChange{Progress: resp.IsProgressNotify(), Rev: resp.Header.Revision}
			for _, ev := range resp.Events {
				c.Entries = append(c.Entries, mapEntry(mw.l, ev.Kv.Key, ev.Kv.Value, ev.Kv.ModRevision, ev.Type == clientv3.EventTypeDelete))
			}
			if !yield(c) {
				return
			}
		}
	}
}

// RequestProgress asks etcd for a progress notification on the watch's
// stream. (The watcher picks the stream by the context's metadata, which
// this sets as Watch does.)
func (mw *MapWatcher) RequestProgress(ctx context.Context) error {
	return mw.w.RequestProgress(clientv3.WithRequireLeader(ctx))
}

// Close closes the watcher if NewMapWatcher opened it; the watches of a
// store's own watcher end with their contexts.
func (mw *MapWatcher) Close() error {
	if !mw.own {
		return nil
	}
	return mw.w.Close()
}
