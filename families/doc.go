// Package families owns a table's column-family schema: each family's name,
// its garbage-collection policy (max versions, TTL, and how the two
// combine; or a nested GCRule as Cloud Bigtable has it: unions and
// intersections of max-versions and max-age rules), the storage settings
// of its SSTables (compression, bloom filter, block size, in-memory hint),
// and its value type: plain bytes, or an int64 aggregate (sum, min, max)
// whose writes merge into one cell per (row, column, timestamp). It
// validates families, parses and
// prints the CLI form of a family, and evaluates the GC policy.
//
// One evaluator decides which cells the GC policy condemns, so reads (which
// hide condemned cells at once) and compactions (which drop them) always
// agree (docs/CONTRACTS.md §1):
//
//	f, err := families.Parse("metrics:versions=3,ttl=7d,compression=zstd")
//	if err != nil { ... }
//	p := f.Policy(nowMicros)
//	for i, c := range visibleCellsOfOneColumn { // newest first
//		if p.Condemned(c.Timestamp, i) {
//			continue // hidden by reads, dropped by major compactions
//		}
//		...
//	}
//
// A nested rule is given in the spec's gc option:
//
//	f, err := families.Parse("events:gc=union(versions=3,intersection(age=7d,versions=1))")
//
// families knows nothing of servers, RPC or etcd; the SSTable writer imports
// its Compression and Bloom enums.
package families
