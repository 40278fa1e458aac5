// Package locator finds which tablet, and so which tablet server, holds a
// row of a table. It asks the master (LocateTablet, LocateRange), trying
// each master address in turn because standbys answer locates too, and
// keeps what it learns in a cache: per table a slice of tablets sorted by
// start key, where inserting a tablet replaces every cached tablet it
// overlaps (so the children of a split push out their parent).
//
// Concurrent misses for the same key share one lookup. A tablet server's
// "not serving" answer evicts exactly the stale entry (Invalidate compares
// the tablet id and epoch, so a fresher entry another goroutine just
// stored survives), and the next Locate asks the master again.
//
// A caller that has waited too long on a silent server asks Relocate
// whether the tablet has moved meanwhile: it bypasses the cached entry,
// and concurrent or recent relocates of one tablet share one lookup, so
// that many callers stuck on one paused server do not flood the masters.
//
//	loc, err := locator.New([]string{"127.0.0.1:7000", "127.0.0.1:7001"}, locator.Options{})
//	if err != nil { ... }
//	defer loc.Close()
//	t, err := loc.Locate(ctx, "users", []byte("user42"))
//	if err != nil { ... }
//	// talk to t.Address with t.Ref(); on a NotServing answer:
//	if _, ok := locator.NotServingOf(err); ok {
//		loc.Invalidate(t)
//	}
package locator
