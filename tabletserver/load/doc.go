// Package load meters the requests each tablet serves: how many reads and
// writes, how many bytes, and how much time was spent serving them, as
// totals and as rates over the last closed window, with a uniform sample of
// the row keys those requests touched.
//
// The tablet server keeps one Meter per tablet and closes every meter's
// window on one tick (Roll). The master pulls the closed windows with
// ServerStats to balance servers by load and to draw its key-access
// heatmap; the server itself uses the sampled keys to split a hot tablet
// where its load, not its bytes, is halved (docs/OPERATIONS.md
// "Balancing, splits and merges").
//
// Recording is on every data call's path, so it costs a few atomic adds
// and, for the key sample, one random draw; the lock is taken only when a
// key enters the sample, which becomes rarer as a window fills.
package load
