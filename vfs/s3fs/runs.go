package s3fs

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
)

// A file synced many times (a commit log segment: one part per group
// commit) would cost its reader one GET per part: a dead server's shared
// log of a lightly loaded server is thousands of parts of a few hundred
// bytes, and replaying it was a GET per group commit (docs/BENCHMARKS.md
// "Failover on an object store"). So the writer also uploads, in the
// background, runs: objects holding the bytes of a range of parts it
// uploaded before, and a reader reads a run in place of the parts it
// covers.
//
// Object layout of a file (key without suffix):
//
//	<key>~00000000 ... <key>~0000000n    the parts, one per Sync (parts.go)
//	<key>~r<first>-<last>                a run: the bytes of parts first..last
//
// first and last are decimal, zero-padded to at least 8 digits, as part
// numbers are. A run of level L covers runFanout^L parts, from a multiple
// of that: after part n is uploaded, a run of each level whose span ends
// at n is queued (levels 1..runLevels: 16, 256, 4,096 and 65,536 parts),
// unless it would exceed maxRunBytes (large parts cost a reader bytes,
// not requests). A reader covers the parts greedily from part 0 with the
// longest run that starts at the part it needs (readPlan), so a file of
// n parts reads in at most 15 objects per level plus n/65,536.
//
// Runs are redundant copies, never the only place of a byte: the parts
// stay (every durability promise is the part's PUT, as before), a reader
// lists every part and checks that they are contiguous as before, and it
// uses a run only if it starts at a listed part, ends at one and its size
// is the sum of theirs. A run is uploaded only after the parts it covers,
// and never rewritten: a run PUT that fails or is cut short by a crash
// only costs a reader the GETs of the parts it would have covered.
// Removing a file deletes its runs first and its parts after (Remove,
// Truncate), so a removal cut short never leaves a run whose parts are
// gone; Create deletes the runs of a file that has none of its parts left
// (a run whose PUT landed after its file was removed).
//
// Readers from before runs existed skip the "~r" keys (they are not part
// numbers) and read the parts: the format stays readable both ways.
const (
	runFanout = 16
	runLevels = 4
	// maxRunBytes bounds a run: parts that large make a file that a
	// reader fetches at the store's bandwidth, whatever their count.
	maxRunBytes = 8 << 20
	// runQueue bounds the runs a writer has queued; past it a run is
	// skipped (its parts serve), so that a slow store never makes the
	// writer's memory or Close wait grow.
	runQueue = 8
)

// runPrefix follows the part separator in a run's key.
const runPrefix = "r"

// runKey returns the key of the run of key holding parts first..last.
func runKey(key string, first, last int) string {
	return key + partSep + formatRun(first, last)
}

func formatRun(first, last int) string {
	return fmt.Sprintf("%s%08d-%08d", runPrefix, first, last)
}

// parseRun parses the suffix of a run's key (after the part separator):
// ok is false for anything formatRun does not produce with first < last.
func parseRun(s string) (first, last int, ok bool) {
	rest, found := strings.CutPrefix(s, runPrefix)
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, false
	}
	first, err1 := strconv.Atoi(a)
	last, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || first < 0 || first >= last || formatRun(first, last) != s {
		return 0, 0, false
	}
	return first, last, true
}

// readPlan returns the objects to read file key from: its parts ps
// (contiguous from 0, with their offsets), with each stretch that a run
// in rs covers exactly read from the run instead, the longest first.
func readPlan(key string, ps, rs []part) []part {
	if len(rs) == 0 {
		return ps
	}
	byFirst := map[int][]part{}
	for _, r := range rs {
		byFirst[r.num] = append(byFirst[r.num], r)
	}
	plan := make([]part, 0, len(ps))
	for i := 0; i < len(ps); {
		best := -1
		for _, r := range byFirst[i] {
			if r.last >= len(ps) || r.last <= best {
				continue
			}
			end := ps[r.last].off + ps[r.last].size
			if r.size != end-ps[i].off {
				continue // not the bytes of these parts: never read it
			}
			best = r.last
		}
		if best < 0 {
			plan = append(plan, ps[i])
			i++
			continue
		}
		last := ps[best]
		plan = append(plan, part{key: runKey(key, i, best), num: i, last: best, off: ps[i].off,
			size: last.off + last.size - ps[i].off, modified: last.modified})
		i = best + 1
	}
	return plan
}

// runJob is a run a writer queued: parts first..last, the bytes from..to
// of its spool.
type runJob struct {
	first, last int
	from, to    int64
}

// runner uploads a writer's runs in the background, one at a time, so
// that a run never delays the Sync that acknowledges writes.
type runner struct {
	jobs chan runJob
	done chan struct{}
}

// queueRuns queues the runs that end at the part just uploaded (number
// w.next-1, ending at w.uploaded), starting the writer's runner at the
// first.
func (w *writer) queueRuns() {
	n := w.next // parts uploaded
	if n%runFanout == 0 {
		w.bounds = append(w.bounds, w.uploaded) // where part n starts
	}
	for span, level := runFanout, 1; level <= runLevels && n%span == 0; span, level = span*runFanout, level+1 {
		first := n - span
		from := w.bounds[first/runFanout]
		if w.uploaded-from > maxRunBytes {
			break // the longer levels are larger still
		}
		if w.runs == nil {
			w.runs = &runner{jobs: make(chan runJob, runQueue), done: make(chan struct{})}
			go w.runUploads(w.runs)
		}
		select {
		case w.runs.jobs <- runJob{first: first, last: n - 1, from: from, to: w.uploaded}:
		default: // the store is slow: the parts serve
		}
	}
}

// runUploads uploads the runs queued on r until the writer closes it. A
// failed upload is dropped: the parts it would have covered still serve.
func (w *writer) runUploads(r *runner) {
	defer close(r.done)
	for j := range r.jobs {
		if runFault != nil && runFault(w.key, j) {
			continue
		}
		ctx, cancel := w.f.ctx()
		body := io.NewSectionReader(w.spool, j.from, j.to-j.from)
		_, _ = w.f.c.PutObject(ctx, w.f.cfg.Bucket, runKey(w.key, j.first, j.last), body, j.to-j.from, minio.PutObjectOptions{})
		cancel()
	}
}

// runFault, if set, is asked before each run's upload whether the run is
// lost (tests: a failed PUT, or a writer killed before it).
var runFault func(key string, j runJob) bool

// stopRuns waits for the runs queued to be uploaded; called by Close.
func (w *writer) stopRuns() {
	if w.runs == nil {
		return
	}
	close(w.runs.jobs)
	<-w.runs.done
}

// Objects returns how many parts and how many runs the file name is
// stored as (for tests and measurements of what a reader of it costs).
func (f *FS) Objects(name string) (parts, runs int, err error) {
	key, err := f.key(name)
	if err != nil {
		return 0, 0, err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	ps, rs, err := f.listParts(ctx, key)
	return len(ps), len(rs), err
}
