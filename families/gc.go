package families

import (
	"fmt"
	"math"
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
type Policy struct {
	maxVersions  int   // 0: no version rule
	hasTTL       bool  // whether the TTL rule is set
	cutoff       int64 // with hasTTL: cells with Timestamp < cutoff are expired
	intersection bool
}

// Policy compiles the family's GC rules at nowMicros (microseconds since the
// Unix epoch). The TTL arithmetic saturates: a TTL reaching before the
// smallest int64 expires nothing rather than wrapping around.
func (f *Family) Policy(nowMicros int64) Policy {
	p := Policy{intersection: f.GC == GCIntersection}
	if f.MaxVersions > 0 {
		p.maxVersions = f.MaxVersions
	}
	if f.TTL > 0 {
		p.hasTTL = true
		p.cutoff = subSaturating(nowMicros, f.TTL.Microseconds())
	}
	return p
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
func (p Policy) Unlimited() bool { return p.maxVersions == 0 && !p.hasTTL }

// Condemned reports whether a visible cell is condemned. versionIndex is the
// cell's 0-based rank among the visible (not deleted) cells of its column,
// newest timestamp first.
func (p Policy) Condemned(timestamp int64, versionIndex int) bool {
	versions := p.maxVersions > 0 && versionIndex >= p.maxVersions
	expired := p.hasTTL && timestamp < p.cutoff
	switch {
	case p.maxVersions > 0 && p.hasTTL:
		if p.intersection {
			return versions && expired
		}
		return versions || expired
	case p.maxVersions > 0:
		return versions
	case p.hasTTL:
		return expired
	}
	return false
}

// ExpiredFileCutoff reports whether the policy lets a whole file be dropped
// without reading it, and the cutoff: every cell of a file whose newest
// cell timestamp is < cutoff is condemned. That holds when the TTL is set
// and either the mode is union or the TTL is the only rule; under an
// intersection with MaxVersions an old cell may still be one of the newest
// versions, so it returns false.
//
// The caller must still make sure dropping the file's tombstones cannot
// bring back cells of other files that they delete.
func (p Policy) ExpiredFileCutoff() (int64, bool) {
	if !p.hasTTL || (p.intersection && p.maxVersions > 0) {
		return 0, false
	}
	return p.cutoff, true
}

// wholeMicros reports whether d is a whole number of microseconds.
func wholeMicros(d time.Duration) bool { return d%time.Microsecond == 0 }
