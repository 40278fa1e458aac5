package meta

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// CloneTable is CreateTable for a table cloned from a snapshot
// (docs/CONTRACTS.md §4a): in the same ONE transaction it writes snap's
// record, which names the new table among its clones, guarded besides by
// that record's ModRevision still being snapRev. A snapshot deleted or
// retired since it was read fails the transaction (ErrConflict), so no
// clone ever names the files of a snapshot whose holds may be released.
func CloneTable(ctx context.Context, kv clientv3.KV, l Layout, table TableRecord, tablets []TabletRecord, snap *tabulapb.Snapshot, snapRev int64, g Guard) error {
	k := l.SnapshotKey(snap.GetId())
	return createTable(ctx, kv, l, table, tablets,
		[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", snapRev)},
		[]clientv3.Op{clientv3.OpPut(k, EncodeSnapshot(snap))}, g)
}
