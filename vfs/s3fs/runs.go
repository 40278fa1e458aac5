package s3fs

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

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
//	<key>~00000000 ... <key>~0000000n      the parts, one per Sync (parts.go)
//	<key>~r<first>-<last>-<from>-<to>      a run: the bytes of parts first..last,
//	                                       which are bytes from..to of the file
//
// first and last are decimal, zero-padded to 8 digits as part numbers
// are, from and to plain decimal. A run of level L covers runFanout^L
// parts, from a multiple of that: after part n is uploaded, a run of
// each level whose span ends at n is queued (levels 1..runLevels: 16,
// 256, 4,096 and 65,536 parts), unless it would exceed maxRunBytes (large
// parts cost a reader bytes, not requests). A reader covers the parts
// greedily from part 0 with the longest run that starts where it is
// (readPlan, readParts), so a file of n parts reads in at most 15
// objects per level plus n/65,536. When the writer closes the file it
// also queues one run of the parts after the last runs (queueClosingRun),
// so a closed file (a segment the log moved on from) reads in runs
// alone. Runs go up one at a time in the background and no Sync waits
// for them; Close waits for those queued.
//
// Runs are redundant copies, never the only place of a byte: the parts
// stay (every durability promise is the part's PUT, as before). A run is
// uploaded only after the parts it covers, and never rewritten: a run
// PUT that fails or is cut short by a crash only costs a reader the GETs
// of the parts it would have covered. A reader uses a run only if its
// size is what its name says and its bytes start where the reader is in
// the file, and, where it lists the parts the run covers, if they end
// where the run does. Removing a file deletes its runs first and its
// parts after (Remove, Truncate), so a removal cut short never leaves a
// run whose parts are gone; Create deletes the runs of a file that has
// none of its parts left (a run whose PUT landed after its file was
// removed).
//
// Readers from before runs existed skip the "~r" keys (they are not part
// numbers) and read the parts: the format stays readable both ways. Their
// Remove leaves a file's runs behind (RemoveAll, which the master's log
// GC uses, removes everything under the name).
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

// runName is what a run's key says of it: the parts it covers, first to
// last, and where their bytes are in the file, from to to.
type runName struct {
	first, last int
	from, to    int64
}

// runKey returns the key of the run r of the file key.
func runKey(key string, r runName) string { return key + partSep + r.String() }

func (r runName) String() string {
	return fmt.Sprintf("%s%08d-%08d-%d-%d", runPrefix, r.first, r.last, r.from, r.to)
}

// parseRun parses the suffix of a run's key (after the part separator):
// ok is false for anything String does not produce with first < last
// and from <= to.
func parseRun(s string) (r runName, ok bool) {
	rest, found := strings.CutPrefix(s, runPrefix)
	if !found {
		return runName{}, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 4 {
		return runName{}, false
	}
	var n [4]int64
	for i, x := range f {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil || v < 0 {
			return runName{}, false
		}
		n[i] = v
	}
	if n[0] > math.MaxInt32 || n[1] > math.MaxInt32 {
		return runName{}, false
	}
	r = runName{first: int(n[0]), last: int(n[1]), from: n[2], to: n[3]}
	if r.first >= r.last || r.from > r.to || r.String() != s {
		return runName{}, false
	}
	return r, true
}

// asPart is the run listed as object o (its key and size), as a part of
// the plan: it holds the file's bytes from r.from.
func (r runName) asPart(key string, size int64, modified time.Time) part {
	return part{key: key, num: r.first, last: r.last, off: r.from, size: size, end: r.to, modified: modified}
}

// fits reports whether the run p (asPart) holds the bytes at offset off
// of the parts ps[i..] (ps[i] at offset off): its size is what its name
// says, it starts at off, and, where its last part is in ps, it ends
// where that part does.
func fits(p part, off int64, ps []part, i int) bool {
	if p.size != p.end-p.off || p.off != off {
		return false
	}
	if len(ps) == 0 {
		return true
	}
	last := p.last - ps[0].num
	if last >= len(ps) {
		return false
	}
	return i < len(ps) && ps[i].off == off && ps[last].off+ps[last].size == p.end
}

// readPlan returns the objects to read a file from: its parts ps
// (contiguous, from any number, with their offsets), with each stretch
// that a run in rs covers exactly (fits) read from the run instead, the
// longest first.
func readPlan(ps, rs []part) []part {
	if len(rs) == 0 || len(ps) == 0 {
		return ps
	}
	base := ps[0].num
	byFirst := map[int][]part{}
	for _, r := range rs {
		byFirst[r.num] = append(byFirst[r.num], r)
	}
	plan := make([]part, 0, len(ps))
	for i := 0; i < len(ps); {
		var best *part
		for j, r := range byFirst[base+i] {
			if fits(r, ps[i].off, ps, i) && (best == nil || r.last > best.last) {
				best = &byFirst[base+i][j]
			}
		}
		if best == nil {
			plan = append(plan, ps[i])
			i++
			continue
		}
		plan = append(plan, *best)
		i = best.last - base + 1
	}
	return plan
}

// runner uploads a writer's runs in the background, one at a time, so
// that a run never delays the Sync that acknowledges writes.
type runner struct {
	jobs chan runName
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
		w.queue(runName{first: first, last: n - 1, from: from, to: w.uploaded})
	}
}

// queue queues j, unless runQueue runs wait already (the store is slow:
// the parts serve).
func (w *writer) queue(j runName) {
	if w.runs == nil {
		w.runs = &runner{jobs: make(chan runName, runQueue), done: make(chan struct{})}
		go w.runUploads(w.runs)
	}
	select {
	case w.runs.jobs <- j:
	default:
	}
}

// queueClosingRun queues, when the writer closes, one run of the parts
// after the last run of some level, so that a closed file (a segment the
// log moved on from) reads in runs alone: from the latest multiple of the
// longest span that keeps the run within maxRunBytes.
func (w *writer) queueClosingRun() {
	n := w.next
	for span := pow(runFanout, runLevels); span >= runFanout; span /= runFanout {
		first := n - n%span
		if n-first < 2 || isSpan(n-first) {
			return // at most one object after the runs of this level, nor of shorter ones
		}
		if w.uploaded-w.bounds[first/runFanout] <= maxRunBytes {
			w.queue(runName{first: first, last: n - 1, from: w.bounds[first/runFanout], to: w.uploaded})
			return
		}
	}
}

// isSpan reports whether n parts are the span of a level of runs.
func isSpan(n int) bool {
	for span := runFanout; span <= pow(runFanout, runLevels); span *= runFanout {
		if n == span {
			return true
		}
	}
	return false
}

func pow(b, e int) int {
	n := 1
	for range e {
		n *= b
	}
	return n
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
		_, _ = w.f.c.PutObject(ctx, w.f.cfg.Bucket, runKey(w.key, j), body, j.to-j.from, minio.PutObjectOptions{})
		cancel()
	}
}

// runFault, if set, is asked before each run's upload whether the run is
// lost (tests: a failed PUT, or a writer killed before it).
var runFault func(key string, j runName) bool

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
