// Package s3fs is a vfs.FS on an S3-compatible object store (AWS S3, Ceph
// RGW, SeaweedFS, MinIO, Garage, GCS's S3 interface), through minio-go.
//
// A file is one or more immutable objects, its parts:
//
//	<prefix>/<path>~00000000, <prefix>/<path>~00000001, ...
//
// Writes are spooled to a local temporary file; each Sync uploads the
// bytes written since the previous Sync as the next part (one PUT), and
// Close uploads the rest. So an SSTable, synced once and closed, is one
// object, and a commit log segment is one object per group commit, as
// docs/CONTRACTS.md §3 asks: a part is durable once its PUT returned, and
// a reader never sees half a part. Reading concatenates the parts, listed
// once when the file is opened, with ranged GETs. So that a segment of
// thousands of group commits does not cost a GET per part to read, its
// writer also uploads runs of its parts in the background (runs.go),
// which readers read instead.
//
// Directories are marker objects ("<prefix>/<path>/") so that an empty
// directory exists, as on a disk; MkdirAll writes each marker once per FS.
// Rename needs a one-part source and copies it server side; the copy
// replaces the target atomically. A manifest does not need it: the FS
// writes, reads and removes a small file in one request each
// (vfs.WholeFiles: part 0 written, read and deleted by its key, without
// listing the parts), and a PUT under a new name is as atomic as a rename.
// SyncDir has nothing to do. FS.Requests counts the requests sent, by kind.
//
// Table names, tablet ids and file names never contain '~', so a part
// suffix cannot be mistaken for a name.
package s3fs
