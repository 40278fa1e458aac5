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
// once when the file is opened, with ranged GETs.
//
// Directories are marker objects ("<prefix>/<path>/") so that an empty
// directory exists, as on a disk. Rename, used only to publish a finished
// file (a manifest), needs a one-part source and copies it server side;
// the copy replaces the target atomically. SyncDir has nothing to do.
//
// Table names, tablet ids and file names never contain '~', so a part
// suffix cannot be mistaken for a name.
package s3fs
