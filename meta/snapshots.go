package meta

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// Snapshots (docs/CONTRACTS.md §4a): snapshots/<id> is a snapshot's
// record. Its holds on storage (manifest.SaveHold) are live while the
// record exists: the master's GC keeps the folders they need, and a
// tablet's owner releases the holds of ids without a record.

// SnapshotsPrefix returns the prefix of every snapshot record.
func (l Layout) SnapshotsPrefix() string { return l.root() + "snapshots/" }

// SnapshotKey returns the key of snapshot id's record.
func (l Layout) SnapshotKey(id string) string { return l.SnapshotsPrefix() + id }

// SnapshotFromKey returns the snapshot id of a key under SnapshotsPrefix.
func (l Layout) SnapshotFromKey(key string) (id string, ok bool) {
	id, ok = strings.CutPrefix(key, l.SnapshotsPrefix())
	return id, ok && id != "" && !strings.Contains(id, "/")
}

// ReadSnapshotIDs returns the ids of every snapshot record (keys only), in
// key order.
func ReadSnapshotIDs(ctx context.Context, kv clientv3.KV, l Layout) ([]string, error) {
	resp, err := kv.Get(ctx, l.SnapshotsPrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("meta: reading the snapshot records: %w", err)
	}
	ids := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if id, ok := l.SnapshotFromKey(string(kv.Key)); ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// SnapshotNameKey returns the key that reserves a snapshot's name:
// snapshot-names/<name> holds its id, written and deleted with its record,
// so that two creations of one name cannot both succeed.
func (l Layout) SnapshotNameKey(name string) string { return l.root() + "snapshot-names/" + name }

// Snapshot states.
const (
	SnapshotCreating = "creating"
	SnapshotReady    = "ready"
	// SnapshotRetired is a snapshot deleted while tables cloned from it
	// existed: its name is free and it is no longer listed, but its holds
	// stay live until the master's GC finds nothing else naming its files
	// (docs/CONTRACTS.md §4a).
	SnapshotRetired = "retired"
)

// EncodeSnapshot returns the value stored under SnapshotKey.
func EncodeSnapshot(s *tabulapb.Snapshot) string {
	b, err := protojson.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("meta: encoding snapshot: %v", err)) // a valid message always marshals
	}
	return string(b)
}

// DecodeSnapshot parses a value stored under SnapshotKey.
func DecodeSnapshot(b []byte) (*tabulapb.Snapshot, error) {
	s := &tabulapb.Snapshot{}
	if err := protojson.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%w: snapshot: %v", ErrCorrupt, err)
	}
	return s, nil
}

// VersionedSnapshot is a snapshot record with its key's ModRevision.
type VersionedSnapshot struct {
	*tabulapb.Snapshot
	ModRevision int64
}

// CreateSnapshotRecord writes s's record (state creating) and reserves its
// name, guarded by neither existing, by the table's record being at
// ModRevision tableRev, and by g. ErrConflict if any of those fails.
func CreateSnapshotRecord(ctx context.Context, kv clientv3.KV, l Layout, s *tabulapb.Snapshot, tableRev int64, g Guard) (int64, error) {
	k, nk := l.SnapshotKey(s.GetId()), l.SnapshotNameKey(s.GetName())
	resp, err := kv.Txn(ctx).
		If(cmps([]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(k), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(nk), "=", 0),
			clientv3.Compare(clientv3.ModRevision(l.TableKey(s.GetTable())), "=", tableRev),
		}, g)...).
		Then(clientv3.OpPut(k, EncodeSnapshot(s)), clientv3.OpPut(nk, s.GetId())).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("meta: creating snapshot %s: %w", s.GetName(), err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%w: snapshot %s exists, or table %s changed (or the guard failed)", ErrConflict, s.GetName(), s.GetTable())
	}
	return resp.Header.Revision, nil
}

// PutSnapshotRecord writes s over its record at ModRevision rev, guarded
// by that and by g.
func PutSnapshotRecord(ctx context.Context, kv clientv3.KV, l Layout, s *tabulapb.Snapshot, rev int64, g Guard) error {
	k := l.SnapshotKey(s.GetId())
	resp, err := kv.Txn(ctx).
		If(cmps([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", rev)}, g)...).
		Then(clientv3.OpPut(k, EncodeSnapshot(s))).
		Commit()
	if err != nil {
		return fmt.Errorf("meta: writing snapshot %s: %w", s.GetName(), err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: snapshot %s changed since revision %d (or the guard failed)", ErrConflict, s.GetName(), rev)
	}
	return nil
}

// DeleteSnapshotRecord deletes s's record and its name's reservation,
// guarded by g. Its holds are dead from then on.
func DeleteSnapshotRecord(ctx context.Context, kv clientv3.KV, l Layout, s *tabulapb.Snapshot, g Guard) error {
	return DeleteSnapshotRecordAt(ctx, kv, l, s, 0, g)
}

// DeleteSnapshotRecordAt is DeleteSnapshotRecord guarded besides by the
// record's ModRevision still being rev (0: any): a user's delete must not
// pass a clone committed since its read (CloneTable), whose files the
// holds keep.
func DeleteSnapshotRecordAt(ctx context.Context, kv clientv3.KV, l Layout, s *tabulapb.Snapshot, rev int64, g Guard) error {
	var first []clientv3.Cmp
	if rev != 0 {
		first = append(first, clientv3.Compare(clientv3.ModRevision(l.SnapshotKey(s.GetId())), "=", rev))
	}
	// The name is reserved exactly while its record exists (both are
	// written and deleted together), so it is this snapshot's.
	resp, err := kv.Txn(ctx).
		If(cmps(first, g)...).
		Then(clientv3.OpDelete(l.SnapshotKey(s.GetId())), clientv3.OpDelete(l.SnapshotNameKey(s.GetName()))).
		Commit()
	if err != nil {
		return fmt.Errorf("meta: deleting snapshot %s: %w", s.GetName(), err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: deleting snapshot %s: it changed since revision %d, or the guard failed", ErrConflict, s.GetName(), rev)
	}
	return nil
}

// ListSnapshotRecords reads every snapshot record, in key order.
func ListSnapshotRecords(ctx context.Context, kv clientv3.KV, l Layout) ([]VersionedSnapshot, error) {
	resp, err := kv.Get(ctx, l.SnapshotsPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("meta: reading the snapshot records: %w", err)
	}
	out := make([]VersionedSnapshot, 0, len(resp.Kvs))
	for _, e := range resp.Kvs {
		s, err := DecodeSnapshot(e.Value)
		if err != nil {
			return nil, fmt.Errorf("%w (key %s)", err, e.Key)
		}
		out = append(out, VersionedSnapshot{s, e.ModRevision})
	}
	return out, nil
}

// RetireSnapshotRecord marks s's record retired (SnapshotRetired) and
// frees its name, guarded by the record's ModRevision rev and g: a clone
// committed since fails the guard, and the caller reads again.
func RetireSnapshotRecord(ctx context.Context, kv clientv3.KV, l Layout, s *tabulapb.Snapshot, rev int64, g Guard) error {
	k := l.SnapshotKey(s.GetId())
	r := proto.Clone(s).(*tabulapb.Snapshot)
	r.State = SnapshotRetired
	resp, err := kv.Txn(ctx).
		If(cmps([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", rev)}, g)...).
		Then(clientv3.OpPut(k, EncodeSnapshot(r)), clientv3.OpDelete(l.SnapshotNameKey(s.GetName()))).
		Commit()
	if err != nil {
		return fmt.Errorf("meta: retiring snapshot %s: %w", s.GetName(), err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: snapshot %s changed since revision %d (or the guard failed)", ErrConflict, s.GetName(), rev)
	}
	return nil
}

// DropRetiredSnapshot deletes the retired record id, guarded by its
// ModRevision still being rev and by g (ErrConflict otherwise). Its name
// was freed when it retired.
func DropRetiredSnapshot(ctx context.Context, kv clientv3.KV, l Layout, id string, rev int64, g Guard) error {
	k := l.SnapshotKey(id)
	resp, err := kv.Txn(ctx).
		If(cmps([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", rev)}, g)...).
		Then(clientv3.OpDelete(k)).
		Commit()
	if err != nil {
		return fmt.Errorf("meta: dropping retired snapshot %s: %w", id, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: retired snapshot %s changed since revision %d (or the guard failed)", ErrConflict, id, rev)
	}
	return nil
}
