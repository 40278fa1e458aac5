package rowfilter

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/tabuladb/tabula/cell"
)

// MaxDepth is how deeply filters may nest; the root is at depth 1.
const MaxDepth = 64

// MaxLabelLen is the longest label apply_label_transformer takes (as in
// Bigtable).
const MaxLabelLen = 15

// Compiled is a validated filter, ready to apply to rows. It is immutable
// and safe for concurrent use. A nil *Compiled passes everything.
type Compiled struct {
	root    *node
	hasSink bool           // some node is a Sink: Apply pools side outputs
	rand    func() float64 // RowSample's draws
}

// Options change how a filter is compiled. The zero value is the default.
type Options struct {
	// Rand returns a number in [0, 1) for each RowSample decision; a row
	// passes a RowSample(p) when the draw is below p. It must be safe for
	// concurrent use when the Compiled filter is. Tests inject a seeded
	// source here. The default is math/rand/v2.Float64.
	Rand func() float64
}

// node is a compiled Filter with its regexps built and its planner hints
// worked out.
type node struct {
	kind     Kind
	children []*node     // Chain, Interleave
	pred     *node       // Condition
	onTrue   *node       // Condition; nil emits nothing
	onFalse  *node       // Condition; nil emits nothing
	re       *byteRegexp // *Regex kinds
	prefix   []byte      // RowKeyPrefix
	family   string      // Family, QualifierRange ("" = any)
	rng      byteRange   // QualifierRange, ValueRange
	t0, t1   int64       // TimestampRange
	n        int         // limits and offset
	labels   []string    // Label: {label}, shared by the cells it labels
	p        float64     // RowSample

	hasLabel bool // the subtree contains a Label
	hasSink  bool // the subtree contains a Sink

	fam  restriction[families]
	time restriction[span]
}

// byteRange is a QualifierRange's or ValueRange's bounds.
type byteRange struct {
	start, end         []byte
	startOpen, endOpen bool
	hasEnd             bool
}

// Compile validates f and prepares it for Apply, with the default Options.
// A nil f passes everything. Errors wrap cell.ErrInvalid and name the
// filter (by its path from the root) and the field.
func Compile(f *Filter) (*Compiled, error) { return CompileWith(f, Options{}) }

// CompileWith is Compile with options.
func CompileWith(f *Filter, o Options) (*Compiled, error) {
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if f == nil {
		return &Compiled{root: &node{kind: KindPass, fam: unrestricted[families](true), time: unrestricted[span](true)}, rand: o.Rand}, nil
	}
	root, err := compile(f, "filter", 1, false)
	if err != nil {
		return nil, err
	}
	return &Compiled{root: root, hasSink: root.hasSink, rand: o.Rand}, nil
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
	fieldLabel
	fieldProbability
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
	KindLabel:               fieldLabel,
	KindRowSample:           fieldProbability,
}

var fieldNames = []string{"Filters", "Predicate/True/False", "Regex", "Prefix", "Family", "Start/End", "TimeStart/TimeEnd", "N", "Label", "Probability"}

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
	if f.Label != "" {
		m |= fieldLabel
	}
	if f.Probability != 0 {
		m |= fieldProbability
	}
	return m
}

// compile compiles f, found at path; inCondition says whether it lies
// within a Condition (where Bigtable allows no Sink).
func compile(f *Filter, path string, depth int, inCondition bool) (*node, error) {
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
			if n.children[i], err = compile(c, fmt.Sprintf("%s.filters[%d]", path, i), depth+1, inCondition); err != nil {
				return nil, err
			}
			n.hasLabel = n.hasLabel || n.children[i].hasLabel
			n.hasSink = n.hasSink || n.children[i].hasSink
		}
		if f.Kind == KindChain {
			if err := checkChainLabels(n.children, path); err != nil {
				return nil, err
			}
		}
	case KindCondition:
		if f.Predicate == nil {
			return nil, invalid("Predicate is missing; a condition needs a predicate filter")
		}
		if n.pred, err = compile(f.Predicate, path+".predicate", depth+1, true); err != nil {
			return nil, err
		}
		if f.True != nil {
			if n.onTrue, err = compile(f.True, path+".true", depth+1, true); err != nil {
				return nil, err
			}
		}
		if f.False != nil {
			if n.onFalse, err = compile(f.False, path+".false", depth+1, true); err != nil {
				return nil, err
			}
		}
		// A predicate's labels never reach the output, but Bigtable counts
		// them when it checks a chain, and so do we.
		for _, b := range []*node{n.pred, n.onTrue, n.onFalse} {
			n.hasLabel = n.hasLabel || (b != nil && b.hasLabel)
		}
	case KindRowKeyRegex, KindFamilyRegex, KindQualifierRegex, KindValueRegex:
		if f.Kind == KindRowKeyRegex && f.Regex == "" {
			// Bigtable rejects it; it would match no row (keys are never empty).
			return nil, invalid("Regex is empty; give a pattern for the row key")
		}
		if f.Kind == KindFamilyRegex && strings.Contains(f.Regex, ":") {
			return nil, invalid("Regex %q contains ':'; Bigtable does not allow ':' in a family regex (family names never contain it)", f.Regex)
		}
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
	case KindSink:
		if inCondition {
			return nil, invalid("a sink cannot be used within a condition's predicate, true or false filter (as in Bigtable); move it out of the condition")
		}
		n.hasSink = true
	case KindLabel:
		if err := validateLabel(f.Label); err != nil {
			return nil, invalid("%v", err)
		}
		n.labels = []string{f.Label}
		n.hasLabel = true
	case KindRowSample:
		if !(f.Probability > 0 && f.Probability < 1) {
			return nil, invalid("Probability is %v; row_sample_filter must be between 0.0 and 1.0, exclusive", f.Probability)
		}
		n.p = f.Probability
	}
	n.fam = familyHint(n, f)
	n.time = timeHint(n)
	return n, nil
}

// validateLabel checks an apply_label_transformer label: Bigtable takes 1
// to 15 characters matching RE2([a-z0-9\-]+).
func validateLabel(l string) error {
	ok := l != "" && len(l) <= MaxLabelLen
	for i := 0; ok && i < len(l); i++ {
		c := l[i]
		ok = 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-'
	}
	if !ok {
		return fmt.Errorf(`Label %q is not a label: apply_label_transformer must match RE2([a-z0-9\-]+) and be at most %d characters`, l, MaxLabelLen)
	}
	return nil
}

// checkChainLabels enforces Bigtable's rule that a cell carries at most one
// label: only one of a chain's children may contain a Label (an interleave
// may have many, as they label separate copies).
func checkChainLabels(children []*node, path string) error {
	first := -1
	for i, c := range children {
		if !c.hasLabel {
			continue
		}
		if first >= 0 {
			return cell.Invalidf("%s (chain): filters[%d] and filters[%d] both apply a label; a cell can carry only one label, so a chain may have at most one sub-filter containing apply_label_transformer (use an interleave to label separate copies)", path, first, i)
		}
		first = i
	}
	return nil
}
