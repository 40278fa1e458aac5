// Package tablet is the storage engine of one tablet: everything below RPC.
//
// A Tablet writes a commit log (its own, or its handle on the tablet
// server's shared log, package sharedlog) and owns one memtable (a skiplist
// per column family) and per family a stack of immutable SSTables recorded
// in a manifest. Writes
// go through a group-committed log and become visible atomically per row;
// reads merge the memtable and the SSTables, apply deletes by sequence
// number (in an aggregate family merging the entries of one cell, see
// aggregate.go), the family's GC policy and the request's filter. A
// reversed read (ReadOptions.Reverse) walks every source backwards a row
// at a time (reverse.go) and assembles each row with the forward path's
// code.
// Background work
// flushes memtables, compacts SSTables and drops expired files; Split hands
// the tablet's files to two children by reference; DropRange deletes a row
// range in bulk by dropping whole SSTables (and rewriting those it cuts).
//
// Use:
//
//	t, err := tablet.Open(tablet.Options{
//		Dir:      "/data/tables/users/t1",
//		Create:   true, // a brand-new tablet; without it a folder without files is an error
//		Families: []families.Family{{Name: "cf", MaxVersions: 3}},
//	})
//	if err != nil { ... }
//	defer t.Close()
//	err = t.Apply(ctx, []byte("row1"), []cell.Mutation{{Kind: cell.SetCell,
//		Family: "cf", Qualifier: []byte("q"), Timestamp: cell.ServerTimestamp, Value: []byte("v")}})
//	cells, err := t.ReadRow(ctx, []byte("row1"), nil)
//	it, err := t.NewRowIterator(ctx, tablet.ReadOptions{Ranges: []tablet.RowRange{{Start: []byte("a"), End: []byte("m")}}})
//	for it.Next() { use(it.Row(), it.Cells()) }
//	err = it.Close()
//
// Every file the engine touches (manifest, commit log, SSTables, split
// children's folders) goes through Options.FS, a vfs.FS that is the local
// disk by default; tests put a vfs.Faulty there to fail the disk under it.
//
// The engine knows nothing of RPC or etcd; the tablet server runs one Tablet
// per loaded tablet and shares a block cache, a MemoryBudget and a compaction
// Limiter between them.
package tablet
