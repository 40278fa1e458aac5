// Package vfs is the storage under the tablet engine: every file that
// SSTables, commit logs, manifests, the tablet server and the master's
// garbage collector touch goes through an FS, so that the same engine runs
// on a local directory or on other storage (docs/CONTRACTS.md §3).
//
// The interface is deliberately small, and shaped by what an object
// store can do as well as a disk: files are created whole and never
// opened for writing again (the exceptions are local-only in spirit:
// Truncate cuts a torn commit-log tail, and the optional Reuser lets a
// commit log overwrite its old segments under new names), read with
// ReadAt, renamed only to publish a finished file, listed by directory.
//
// Implementations:
//
//   - Local (Default): the operating system's files; what Tabula ran on
//     before this package existed, byte for byte.
//   - Faulty: wraps another FS and fails chosen operations (errors,
//     ENOSPC, short writes, calls carried out and then failed, calls that
//     land after their caller gave up, listings that lag), for tests that
//     show a failing disk or store gives clear errors and loses nothing
//     acknowledged.
//
// A mutating call's error is an unknown outcome unless it wraps
// ErrNotApplied: the call may have happened, or may still happen.
//
// Paths are the host's paths (filepath); an FS may reject paths outside
// the root it serves.
package vfs
