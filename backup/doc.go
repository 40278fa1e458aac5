// Package backup copies a table's snapshot to another place and back
// (docs/OPERATIONS.md "Backups", docs/CONTRACTS.md §4b): a backup
// location is a local folder or an object store prefix holding the
// SSTables of every backup made there, shared between backups that name
// the same file, and one self-describing manifest per backup, written
// last.
//
// Create takes a snapshot (or uses a named one), copies every file its
// holds name that the location lacks, in parallel, with a CRC32C of each
// computed while it is copied, and then writes the manifest. Files are
// immutable, so a file the location holds with the size a manifest there
// recorded is the same file and is not copied again (incremental), and a
// create interrupted at any point and run again copies only what it had
// not finished. List, Describe, Delete and Verify read a location; Restore
// writes a backup's cells into a new table.
//
//	loc, _ := backup.Open(ctx, "s3://backups/prod?endpoint=http://10.0.0.5:8333", spool)
//	m, _ := backup.Create(ctx, backup.CreateOptions{Table: "users", To: loc, Source: src, SourceRoot: root, Cluster: admin})
//	rep, _ := backup.Verify(ctx, loc, m.Name)
package backup
