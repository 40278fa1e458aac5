//go:build race

package sstable

// raceEnabled: the race detector changes allocations (its
// instrumentation allocates too), so allocated bytes are not checked
// under it.
const raceEnabled = true
