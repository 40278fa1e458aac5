package rowfilter

import (
	"fmt"
	"regexp"

	"github.com/tabuladb/tabula/cell"
)

// MaxDepth is how deeply filters may nest; the root is at depth 1.
const MaxDepth = 64

// Compiled is a validated filter, ready to apply to rows. It is immutable
// and safe for concurrent use. A nil *Compiled passes everything.
type Compiled struct {
	root *node
}

// node is a compiled Filter with its regexps built and its planner hints
// worked out.
type node struct {
	kind     Kind
	children []*node        // Chain, Interleave
	pred     *node          // Condition
	onTrue   *node          // Condition; nil emits nothing
	onFalse  *node          // Condition; nil emits nothing
	re       *regexp.Regexp // *Regex kinds
	prefix   []byte         // RowKeyPrefix
	family   string         // Family, QualifierRange ("" = any)
	rng      byteRange      // QualifierRange, ValueRange
	t0, t1   int64          // TimestampRange
	n        int            // limits and offset

	fam  restriction[families]
	time restriction[span]
}

// byteRange is a QualifierRange's or ValueRange's bounds.
type byteRange struct {
	start, end         []byte
	startOpen, endOpen bool
	hasEnd             bool
}

// Compile validates f and prepares it for Apply. A nil f passes
// everything. Errors wrap cell.ErrInvalid and name the filter (by its path
// from the root) and the field.
func Compile(f *Filter) (*Compiled, error) {
	if f == nil {
		return &Compiled{root: &node{kind: KindPass, fam: unrestricted[families](true), time: unrestricted[span](true)}}, nil
	}
	root, err := compile(f, "filter", 1)
	if err != nil {
		return nil, err
	}
	return &Compiled{root: root}, nil
}

// Which fields each kind may set.
const (
	fieldFilters = 1 << iota
	fieldCondition
	fieldRegex
	fieldPrefix
	fieldFamily
	fieldRange
	fieldTime
	fieldN
)

var allowedFields = [kindCount]int{
	KindChain:               fieldFilters,
	KindInterleave:          fieldFilters,
	KindCondition:           fieldCondition,
	KindRowKeyRegex:         fieldRegex,
	KindFamilyRegex:         fieldRegex,
	KindQualifierRegex:      fieldRegex,
	KindValueRegex:          fieldRegex,
	KindRowKeyPrefix:        fieldPrefix,
	KindFamily:              fieldFamily,
	KindQualifierRange:      fieldFamily | fieldRange,
	KindValueRange:          fieldRange,
	KindTimestampRange:      fieldTime,
	KindCellsPerRowLimit:    fieldN,
	KindCellsPerRowOffset:   fieldN,
	KindCellsPerColumnLimit: fieldN,
}

var fieldNames = []string{"Filters", "Predicate/True/False", "Regex", "Prefix", "Family", "Start/End", "TimeStart/TimeEnd", "N"}

func setFields(f *Filter) int {
	var m int
	if len(f.Filters) > 0 {
		m |= fieldFilters
	}
	if f.Predicate != nil || f.True != nil || f.False != nil {
		m |= fieldCondition
	}
	if f.Regex != "" {
		m |= fieldRegex
	}
	if len(f.Prefix) > 0 {
		m |= fieldPrefix
	}
	if f.Family != "" {
		m |= fieldFamily
	}
	if f.Start != nil || f.End != nil || f.StartOpen || f.EndOpen {
		m |= fieldRange
	}
	if f.TimeStart != 0 || f.TimeEnd != 0 {
		m |= fieldTime
	}
	if f.N != 0 {
		m |= fieldN
	}
	return m
}

func compile(f *Filter, path string, depth int) (*node, error) {
	if f == nil {
		return nil, cell.Invalidf("%s is nil; give a filter (pass, if it should pass everything)", path)
	}
	if depth > MaxDepth {
		return nil, cell.Invalidf("%s nests filters more than %d deep", path, MaxDepth)
	}
	if f.Kind == kindUnset || f.Kind >= kindCount {
		return nil, cell.Invalidf("%s has unknown kind %d; set Kind", path, uint8(f.Kind))
	}
	invalid := func(format string, args ...any) error {
		return cell.Invalidf("%s (%s): %s", path, f.Kind, fmt.Sprintf(format, args...))
	}
	if stray := setFields(f) &^ allowedFields[f.Kind]; stray != 0 {
		for i, name := range fieldNames {
			if stray&(1<<i) != 0 {
				return nil, invalid("field %s is set but a %s filter does not use it", name, f.Kind)
			}
		}
	}
	n := &node{kind: f.Kind}
	var err error
	switch f.Kind {
	case KindChain, KindInterleave:
		n.children = make([]*node, len(f.Filters))
		for i, c := range f.Filters {
			if n.children[i], err = compile(c, fmt.Sprintf("%s.filters[%d]", path, i), depth+1); err != nil {
				return nil, err
			}
		}
	case KindCondition:
		if f.Predicate == nil {
			return nil, invalid("Predicate is missing; a condition needs a predicate filter")
		}
		if n.pred, err = compile(f.Predicate, path+".predicate", depth+1); err != nil {
			return nil, err
		}
		if f.True != nil {
			if n.onTrue, err = compile(f.True, path+".true", depth+1); err != nil {
				return nil, err
			}
		}
		if f.False != nil {
			if n.onFalse, err = compile(f.False, path+".false", depth+1); err != nil {
				return nil, err
			}
		}
	case KindRowKeyRegex, KindFamilyRegex, KindQualifierRegex, KindValueRegex:
		if len(f.Regex) > maxRegexLen {
			return nil, invalid("Regex is %d bytes; the limit is %d", len(f.Regex), maxRegexLen)
		}
		if n.re, err = compileRegex(f.Regex); err != nil {
			return nil, invalid("Regex %q does not compile as RE2: %v", f.Regex, err)
		}
	case KindRowKeyPrefix:
		if len(f.Prefix) > cell.MaxRowKeyLen {
			return nil, invalid("Prefix is %d bytes; a row key is at most %d", len(f.Prefix), cell.MaxRowKeyLen)
		}
		n.prefix = f.Prefix
	case KindFamily:
		if f.Family == "" {
			return nil, invalid("Family is empty; name a family")
		}
		fallthrough
	case KindQualifierRange, KindValueRange:
		if f.Family != "" && cell.ValidateFamilyName(f.Family) != nil {
			return nil, invalid("Family %q is not a family name (1 to 64 of A-Z a-z 0-9 _ . -)", f.Family)
		}
		n.family = f.Family
		n.rng = byteRange{start: f.Start, end: f.End, startOpen: f.StartOpen, endOpen: f.EndOpen, hasEnd: f.End != nil}
	case KindTimestampRange:
		if f.TimeStart < 0 || f.TimeEnd < 0 {
			return nil, invalid("TimeStart %d or TimeEnd %d is negative; timestamps are microseconds since the epoch", f.TimeStart, f.TimeEnd)
		}
		if f.TimeEnd != 0 && f.TimeEnd < f.TimeStart {
			return nil, invalid("TimeEnd %d is before TimeStart %d; give TimeEnd 0 for no upper bound", f.TimeEnd, f.TimeStart)
		}
		n.t0, n.t1 = f.TimeStart, f.TimeEnd
	case KindCellsPerRowLimit, KindCellsPerColumnLimit:
		if f.N < 1 {
			return nil, invalid("N is %d; a limit must be at least 1", f.N)
		}
		n.n = f.N
	case KindCellsPerRowOffset:
		if f.N < 0 {
			return nil, invalid("N is %d; an offset must be at least 0", f.N)
		}
		n.n = f.N
	}
	n.fam = familyHint(n, f)
	n.time = timeHint(n)
	return n, nil
}
