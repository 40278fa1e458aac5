//go:build !linux

package vfs

// Reuse is not supported off Linux (it needs rename without replace):
// callers create new files instead.
func (Local) Reuse(oldname, newname string) (Writable, error) { return nil, errReuseUnsupported }
