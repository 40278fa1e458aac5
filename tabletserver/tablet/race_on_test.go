//go:build race

package tablet

// raceEnabled: the race detector changes allocations (sync.Pool drops
// items on purpose), so allocation counts are not checked under it.
const raceEnabled = true
