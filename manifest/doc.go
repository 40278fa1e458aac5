// Package manifest keeps the crash-safe record of one tablet's live files:
// the SSTables of every family, the commit-log replay point, the highest
// sequence number the files hold, and the tablet's row range
// (docs/CONTRACTS.md §3 "Manifest"). It is a durable format of its own at
// the top of the tree: the engine writes it, and the tablet server,
// recovery and the master's GC read it without the engine. References
// reads what a tablet folder needs from outside itself (a split or merged
// child's files in its parents' folders, the shared log it replays from);
// a folder whose manifest is not listed is ErrNoTablet, never "nothing".
//
// The whole state is written again on every change, as a new version that
// never replaces a file in place: SaveVersion writes
// MANIFEST-<epoch>-v<version>.tmp, fsyncs it, renames it to
// MANIFEST-<epoch>-v<version> and fsyncs the folder, so after a crash at any
// instant Load (the newest epoch, then the newest version) yields either the
// old or the new state. On an object store (an FS with vfs.WholeFiles)
// each version is one PUT of a new object under its own name, which
// readers see whole or not at all: no temporary object, COPY or DELETE.
// RemoveBefore deletes the versions a newer one superseded.
//
// An opener reads the folder once (ReadFolder: one LIST on a store) and
// answers every question of the open from that Folder: the newest version
// (Folder.Load), the saves of unknown outcome to skip (Folder.Pending),
// what the seal deletes (Folder.Before, RemoveFiles).
//
// A rename or PUT whose answer was lost is not taken for one that did not
// happen: SaveVersion reads the new version back, and when it cannot
// tell, fails with ErrMaybeSaved, after which every file the new state
// names must be kept.
//
//	st, found, err := manifest.Load(fsys, dir) // fsys: a vfs.FS, nil for the local disk
//	if err != nil { ... } // a damaged MANIFEST wraps manifest.ErrCorrupt
//	if !found { st.NextFileNum = 1 } // a new tablet
//	st.Files = append([]manifest.FileRef{ref}, st.Files...)
//	st.ReplayPoint, st.LastSeq = seg, seq
//	err = manifest.Save(fsys, dir, st)
package manifest
