package tablet

import (
	"math"

	"github.com/tabuladb/tabula/families"
)

// A picker chooses a compaction's inputs among a family's files (newest
// first): a contiguous run of them, so that the merged file keeps the
// files' sequence order; nil when nothing is worth merging.
type picker func(files []*tableFile) []*tableFile

// pickAll picks every file: a major compaction.
func pickAll(files []*tableFile) []*tableFile { return files }

// pickExplicit chooses the files of an operator's merging compaction: all
// of them when there are fewer than three; otherwise the newest ones,
// leaving the oldest out when it is bigger than the rest together, so a
// small flush does not rewrite a big base file.
func pickExplicit(files []*tableFile) []*tableFile {
	if len(files) < 3 {
		return files
	}
	var rest uint64
	for _, f := range files[:len(files)-1] {
		rest += f.ref.Size
	}
	if files[len(files)-1].ref.Size > rest {
		return files[:len(files)-1]
	}
	return files
}

// pickBackground chooses the files of a background compaction.
func (t *Tablet) pickBackground(files []*tableFile) []*tableFile {
	return pickTiered(files, t.opts.L0Trigger)
}

// pickTiered is the background compactions' size-tiered policy (RocksDB's
// universal compaction, Cassandra's STCS) over the family's sorted runs
// (runs.go; a file written out of key order is a run of its own): once a
// family has more than trigger runs, merge runs of similar size — from the
// newest run on that starts one, add each next older run while it is no
// bigger than the runs so far, and take them if there are two or more. A
// byte is then rewritten each time the run holding it at least doubles,
// O(log n) times for n bytes ingested; rows written in key order make one
// run and are not rewritten at all. The older rule (merge the newest
// files, leaving out only a base file bigger than all of them) merged the
// base again every few flushes once the rest had grown as big: a write
// amplification linear in n, and a load's compaction time quadratic.
//
// Runs whose sizes grow have no such group: then a contiguous window of
// runs that brings the count back to trigger is merged whatever its
// sizes, so that a family never keeps more than trigger runs once its
// compactions caught up (what Stats' CompactionBacklog counts). Of the
// windows, the one whose bytes times the bytes written per byte that
// joins a bigger run is least: usually the smallest, but never one that
// rewrites a big run to take in a small one, which, as the newest flush
// is always in the smallest window, rewrote that run on every flush (a
// write amplification of 16 at 2,560 flushes, against 1 + log2 n =
// 12.3, in TestPickTieredWriteAmplification's simulation for 8 of 3,000
// seeds). Simulated with flushes of 900–1,099 bytes, 3,000 seeds:
// with the default trigger of 8, write amplification 5.3 at 640 flushes
// and 7.4 at 2,560 (mean; at most 6.7 and 9.9); with 4, 11.9 and 19.7 (of 400
// seeds): it grows faster than log n the fewer runs the trigger allows.
//
// It returns the picked runs' files, a contiguous part of files.
func pickTiered(files []*tableFile, trigger int) []*tableFile {
	runs := sortedRuns(files)
	if r := longRun(runs); r != nil {
		return files[r.first : r.first+len(r.files)]
	}
	if len(runs) <= trigger {
		return nil
	}
	s, e := pickTieredRuns(runs, trigger)
	last := runs[e-1]
	return files[runs[s].first : last.first+len(last.files)]
}

// maxRunFiles bounds the files of a sorted run. Files flushed in key order
// are not merged to bring their count down, and a tablet splits long
// before its run gets this long (a 256 MiB split threshold holds about a
// hundred flushes); one that does not split would keep a descriptor, an
// index and a filter open for every flush: past this many, the run is
// merged into one file.
const maxRunFiles = 512

// longRun returns the first run of more than maxRunFiles files, or nil.
func longRun(runs []run) *run {
	for i := range runs {
		if len(runs[i].files) > maxRunFiles {
			return &runs[i]
		}
	}
	return nil
}

// pickTieredRuns returns the runs [s, e) pickTiered merges; len(runs) >
// trigger.
func pickTieredRuns(runs []run, trigger int) (s, e int) {
	for s := 0; s < len(runs)-1; s++ {
		size := runs[s].size
		e := s + 1
		for e < len(runs) && runs[e].size <= size {
			size += runs[e].size
			e++
		}
		if e-s >= 2 {
			return s, e
		}
	}
	w := len(runs) - max(trigger, 1) + 1
	best, bestCost := 0, math.Inf(1)
	for s := 0; s+w <= len(runs); s++ {
		var sum, biggest uint64
		for _, r := range runs[s : s+w] {
			sum += r.size
			biggest = max(biggest, r.size)
		}
		// Bytes written per byte that joins a bigger run: the window's
		// biggest run is rewritten for the sake of the others. Merging
		// the newest flush into a run a hundred times its size rewrites
		// that run on every flush (write amplification linear in the
		// flushes, seen in TestPickTieredWriteAmplification); merging
		// two runs of similar size doubles the run every byte is in.
		// Ties go to the smaller window: less written now.
		cost := float64(sum) * float64(sum) / float64(max(sum-biggest, 1))
		if cost < bestCost {
			best, bestCost = s, cost
		}
	}
	return best, best + w
}

// nothingToDrop reports whether a major compaction of f, the family's only
// file, would write the same cells again, so that it can be skipped: f is
// the tablet's own, whole file (not a split's reference), holds no
// tombstones, and either the policy condemns nothing (and aggregate cells
// need no merging), or f is the output of a major compaction under this
// same schema of the family (GC applied, aggregate parts merged) and no
// age rule reaches its oldest cell now. Ranks among a column's versions do
// not change when condemned older versions go, so only an age that has
// since come to cover a cell can condemn more. (A file reopened from disk
// carries no such mark: its first major compaction rewrites it once.)
func nothingToDrop(f *tableFile, fam *families.Family, p families.Policy, now int64) bool {
	if hasReferences([]*tableFile{f}) || f.ref.NumTombstones > 0 {
		return false
	}
	if p.Unlimited() && !fam.ValueType.IsAggregate() {
		return true
	}
	if f.majorOf != fam {
		return false
	}
	age, ok := minAge(fam)
	if !ok {
		return true
	}
	return now < math.MinInt64+age || f.ref.MinTimestamp >= now-age
}

// alreadyCompact reports whether a major compaction of files, all of the
// family's, would write the same cells again: one file with nothing to
// drop, or the files one major compaction cut (Options.TargetFileSize)
// under this same schema, still one sorted run, none with anything to
// drop. Without the second case every major compaction after the first
// would rewrite its outputs again.
func alreadyCompact(files []*tableFile, fam *families.Family, p families.Policy, now int64) bool {
	if len(files) == 1 {
		return nothingToDrop(files[0], fam, p, now)
	}
	for _, f := range files {
		if f.majorOf != fam || !nothingToDrop(f, fam, p, now) {
			return false
		}
	}
	return len(sortedRuns(files)) == 1
}

// minAge returns the smallest age (microseconds) past which the family's
// GC rule condemns cells, and whether it has one.
func minAge(fam *families.Family) (int64, bool) {
	if fam.GCRule == nil {
		a := fam.TTL.Microseconds()
		return a, a > 0
	}
	var age int64
	found := false
	var walk func(r *families.GCRule)
	walk = func(r *families.GCRule) {
		if r == nil {
			return
		}
		if a := r.MaxAge.Microseconds(); r.Kind == families.RuleMaxAge && a > 0 && (!found || a < age) {
			age, found = a, true
		}
		for _, c := range r.Rules {
			walk(c)
		}
	}
	walk(fam.GCRule)
	return age, found
}

// defaultL0Trigger is Options.L0Trigger's default (see pickTiered).
const defaultL0Trigger = 8
