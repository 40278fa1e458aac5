package families

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tabuladb/tabula/cell"
)

// GCMode says how a family's MaxVersions and TTL rules combine when both are
// set, as Bigtable's union and intersection GC rules do.
type GCMode uint8

const (
	// GCUnion condemns a cell when ANY set rule condemns it: a cell beyond
	// the newest MaxVersions, or older than the TTL, goes.
	GCUnion GCMode = iota
	// GCIntersection condemns a cell only when EVERY set rule condemns it:
	// a cell goes when it is beyond the newest MaxVersions AND older than
	// the TTL.
	GCIntersection
)

var gcModeNames = []string{"union", "intersection"}

func (m GCMode) String() string {
	if int(m) < len(gcModeNames) {
		return gcModeNames[m]
	}
	return fmt.Sprintf("gcmode(%d)", uint8(m))
}

// ParseGCMode parses "union" or "intersection".
func ParseGCMode(s string) (GCMode, error) {
	for i, n := range gcModeNames {
		if strings.EqualFold(s, n) {
			return GCMode(i), nil
		}
	}
	return 0, cell.Invalidf("gc mode %q is not one of union, intersection", s)
}

// Policy is a family's GC policy compiled against one clock reading. It is
// a small value: copy it freely. The zero Policy condemns nothing.
//
// Every rule condemns a suffix of a column's versions (newest first, the
// timestamp falls as the rank grows, and a leaf condemns from some rank
// on or below some timestamp), and unions and intersections of suffixes
// are suffixes. So any tree reduces to a staircase: a cell of rank r and
// timestamp ts is condemned when, for the last step with minRank <= r,
// ts <= maxTs. Steps are sorted by minRank with maxTs rising. The simple
// form and most nested rules need at most two steps, held in fields so
// that Condemned is four comparisons without a branch; longer staircases
// go to more.
type Policy struct {
	// The first two steps: step i condemns cells of rank >= MaxInt - gi
	// and timestamp <= mi. A gate of 0 (rank MaxInt, never reached) is an
	// unused step, so the zero Policy condemns nothing.
	g0, g1 int
	m0, m1 int64
	more   []step // when there are more than two steps: all of them (g0 = g1 = 0)
}

// step condemns cells of rank >= minRank with timestamp <= maxTs.
type step struct {
	minRank int
	maxTs   int64
}

// Policy compiles the family's GC rule (GCRule when set, else MaxVersions,
// TTL and GC) at nowMicros (microseconds since the Unix epoch). Ages
// saturate: one reaching before the smallest int64 expires nothing rather
// than wrapping around. Compiling the simple form does not allocate, nor
// does a nested rule whose staircase has at most two steps (such as
// union(versions=3,intersection(age=7d,versions=1))).
func (f *Family) Policy(nowMicros int64) Policy {
	if f.GCRule != nil {
		return nestedPolicy(f.GCRule, nowMicros)
	}
	var p Policy
	v, a := f.MaxVersions, f.TTL.Microseconds()
	if v <= 0 {
		v = 0
	}
	if a > 0 {
		cutoff := subSaturating(nowMicros, a)
		if cutoff == math.MinInt64 {
			// The age reaches before time began: it condemns nothing.
			if f.GC == GCIntersection {
				return p
			}
			a = 0
		} else if v > 0 && f.GC == GCIntersection {
			p.g0, p.m0 = math.MaxInt-v, cutoff-1
			return p
		} else {
			p.g0, p.m0 = math.MaxInt, cutoff-1 // rank >= 0
		}
	}
	if v > 0 {
		// A version rule alone, or the second step of a union.
		p.g1, p.m1 = math.MaxInt-v, math.MaxInt64
	}
	return p
}

// nestedPolicy compiles a rule tree; out of line so that the simple form's
// Policy stays small.
func nestedPolicy(r *GCRule, nowMicros int64) Policy {
	var scratch [32]term
	var steps [2]step
	var p Policy
	n := 0
	for _, t := range compile(r, scratch[:0]) {
		s := step{minRank: t.minRank, maxTs: math.MaxInt64}
		if t.age != anyAge {
			cutoff := subSaturating(nowMicros, t.age)
			if cutoff == math.MinInt64 {
				continue // reaches before time began: condemns nothing
			}
			s.maxTs = cutoff - 1
		}
		switch {
		case n < 2:
			steps[n] = s
		case n == 2:
			p.more = append(make([]step, 0, 4), steps[0], steps[1], s)
		default:
			p.more = append(p.more, s)
		}
		n++
	}
	if n <= 2 {
		for i := range n {
			steps[i].minRank = math.MaxInt - steps[i].minRank
		}
		// Unused steps stay zero: gate 0, never reached.
		p.g0, p.m0 = steps[0].minRank, steps[0].maxTs
		p.g1, p.m1 = steps[1].minRank, steps[1].maxTs
	}
	return p
}

// term is a staircase step before the clock is applied: it condemns cells
// of rank >= minRank older than age microseconds (any cell when age is
// anyAge). A term A condemns everything a term B does when A.minRank <=
// B.minRank and A.age <= B.age.
type term struct {
	minRank int
	age     int64
}

// anyAge is the age of a term without an age limit; below every real age,
// so that max() meets it with another age correctly.
const anyAge = -1

// compile appends to buf the Pareto-minimal terms of r (sorted by minRank,
// ages falling) and returns buf. Unions concatenate and prune; an
// intersection's terms are the pairwise meets of its children's terms
// (AND distributes over OR). Leaves that Validate rejects condemn nothing.
func compile(r *GCRule, buf []term) []term {
	if r == nil {
		return buf
	}
	switch r.Kind {
	case RuleMaxVersions:
		if r.MaxVersions >= 1 {
			buf = append(buf, term{r.MaxVersions, anyAge})
		}
	case RuleMaxAge:
		if a := r.MaxAge.Microseconds(); a > 0 {
			buf = append(buf, term{0, a})
		}
	case RuleUnion:
		start := len(buf)
		for _, c := range r.Rules {
			buf = compile(c, buf)
		}
		buf = buf[:start+prune(buf[start:])]
	case RuleIntersection:
		start := len(buf)
		for i, c := range r.Rules {
			mid := len(buf)
			buf = compile(c, buf)
			if i == 0 {
				continue
			}
			end := len(buf)
			for a := start; a < mid; a++ {
				for b := mid; b < end; b++ {
					buf = append(buf, term{max(buf[a].minRank, buf[b].minRank), max(buf[a].age, buf[b].age)})
				}
			}
			n := copy(buf[start:], buf[end:])
			buf = buf[:start+prune(buf[start:start+n])]
		}
	}
	return buf
}

// prune sorts ts by minRank and keeps, in place, the terms no other term
// covers; it returns how many it kept.
func prune(ts []term) int {
	slices.SortFunc(ts, func(a, b term) int {
		if a.minRank != b.minRank {
			return cmp.Compare(a.minRank, b.minRank)
		}
		return cmp.Compare(a.age, b.age)
	})
	n := 0
	for _, t := range ts {
		if n == 0 || t.age < ts[n-1].age {
			ts[n] = t
			n++
		}
	}
	return n
}

// subSaturating returns a-b for b >= 0, clamped at math.MinInt64.
func subSaturating(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

// Unlimited reports whether no rule is set, so nothing is ever condemned;
// callers may skip counting versions.
func (p *Policy) Unlimited() bool { return p.g0 == 0 && p.g1 == 0 && p.more == nil }

// Condemned reports whether a visible cell is condemned. versionIndex is the
// cell's 0-based rank among the visible (not deleted) cells of its column,
// newest timestamp first.
func (p *Policy) Condemned(timestamp int64, versionIndex int) bool {
	if p.more != nil {
		return p.condemnedMore(timestamp, versionIndex)
	}
	// The staircase is the union of its steps: branch-free, the two
	// comparisons of each step and an or.
	s1 := versionIndex >= math.MaxInt-p.g1 && timestamp <= p.m1
	s0 := versionIndex >= math.MaxInt-p.g0 && timestamp <= p.m0
	return s0 || s1
}

func (p *Policy) condemnedMore(timestamp int64, versionIndex int) bool {
	for i := len(p.more) - 1; i >= 0; i-- {
		if versionIndex >= p.more[i].minRank {
			return timestamp <= p.more[i].maxTs
		}
	}
	return false
}

// ExpiredFileCutoff reports whether the policy lets a whole file be dropped
// without reading it, and the cutoff: every cell of a file whose newest
// cell timestamp is < cutoff is condemned whatever its version rank. That
// holds when the rule condemns old cells even at rank 0 (the newest
// version): a TTL alone or in a union, or a nested rule with an age that no
// version rule guards, such as union(age=7d,intersection(...)). Dropping
// such cells changes the rank only of older cells, which are below the
// cutoff too.
//
// The caller must still make sure dropping the file's tombstones cannot
// bring back cells of other files that they delete.
func (p *Policy) ExpiredFileCutoff() (int64, bool) {
	first := step{minRank: math.MaxInt - p.g0, maxTs: p.m0}
	if p.more != nil {
		first = p.more[0]
	}
	if first.minRank != 0 || first.maxTs == math.MaxInt64 {
		return 0, false
	}
	return first.maxTs + 1, true
}

// wholeMicros reports whether d is a whole number of microseconds.
func wholeMicros(d time.Duration) bool { return d%time.Microsecond == 0 }
