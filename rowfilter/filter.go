package rowfilter

import "fmt"

// Kind says which filter a Filter is, and so which of its fields are set.
// The zero Kind is invalid: a Filter must say what it is.
type Kind uint8

const (
	kindUnset Kind = iota
	// KindPass emits every cell.
	KindPass
	// KindBlock emits nothing.
	KindBlock
	// KindChain applies Filters in sequence, each to the previous one's
	// output. An empty chain passes everything.
	KindChain
	// KindInterleave applies each of Filters to the row and merges their
	// outputs in read order, keeping duplicates. An empty interleave emits
	// nothing.
	KindInterleave
	// KindCondition applies True to the row when Predicate emits at least
	// one cell for it, else False. A nil branch emits nothing.
	KindCondition
	// KindRowKeyRegex passes the row when Regex matches its whole key.
	KindRowKeyRegex
	// KindRowKeyPrefix passes the row when its key starts with Prefix.
	KindRowKeyPrefix
	// KindFamilyRegex passes cells whose family name Regex matches.
	KindFamilyRegex
	// KindFamily passes the cells of the family named Family.
	KindFamily
	// KindQualifierRegex passes cells whose qualifier Regex matches.
	KindQualifierRegex
	// KindQualifierRange passes cells whose qualifier lies between Start
	// and End (of family Family when it is not empty).
	KindQualifierRange
	// KindTimestampRange passes cells with a timestamp in [TimeStart,
	// TimeEnd); TimeEnd 0 means no upper bound, and a TimeEnd below
	// TimeStart an empty range (as Bigtable's emulator).
	KindTimestampRange
	// KindValueRegex passes cells whose value Regex matches.
	KindValueRegex
	// KindValueRange passes cells whose value lies between Start and End.
	KindValueRange
	// KindCellsPerRowLimit passes the first N cells of the row.
	KindCellsPerRowLimit
	// KindCellsPerRowOffset skips the first N cells of the row.
	KindCellsPerRowOffset
	// KindCellsPerColumnLimit passes the first N cells of each column.
	KindCellsPerColumnLimit
	// KindStripValue passes every cell with an empty (nil) value.
	KindStripValue
	// KindSink sends the cells it receives straight to the read's output
	// and emits nothing to its parent. Not allowed anywhere inside a
	// Condition.
	KindSink
	// KindLabel passes every cell with Label added to its Labels. A cell
	// carries at most one label: a Chain may have at most one child that
	// contains a KindLabel.
	KindLabel
	// KindRowSample passes each row whole with probability Probability,
	// else nothing.
	KindRowSample
	kindCount
)

var kindNames = [...]string{
	kindUnset:               "unset",
	KindPass:                "pass",
	KindBlock:               "block",
	KindChain:               "chain",
	KindInterleave:          "interleave",
	KindCondition:           "condition",
	KindRowKeyRegex:         "row_key_regex",
	KindRowKeyPrefix:        "row_key_prefix",
	KindFamilyRegex:         "family_regex",
	KindFamily:              "family",
	KindQualifierRegex:      "qualifier_regex",
	KindQualifierRange:      "qualifier_range",
	KindTimestampRange:      "timestamp_range",
	KindValueRegex:          "value_regex",
	KindValueRange:          "value_range",
	KindCellsPerRowLimit:    "cells_per_row_limit",
	KindCellsPerRowOffset:   "cells_per_row_offset",
	KindCellsPerColumnLimit: "cells_per_column_limit",
	KindStripValue:          "strip_value",
	KindSink:                "sink",
	KindLabel:               "apply_label_transformer",
	KindRowSample:           "row_sample",
}

func (k Kind) String() string {
	if k < kindCount {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Filter is one node of a RowFilter tree. Kind says which filter it is;
// only the fields that kind uses may be set (Compile rejects others).
type Filter struct {
	Kind Kind

	// Filters are the children of a Chain or an Interleave.
	Filters []*Filter

	// Predicate, True and False are a Condition's parts. Predicate is
	// required; a nil True or False emits nothing.
	Predicate, True, False *Filter

	// Regex is the RE2 pattern of the *Regex kinds. It must match the
	// WHOLE string (it is anchored at both ends) and works on bytes. As
	// in Bigtable, it is RE2 in Latin-1 mode: each byte of pattern and
	// input is one character, "." matches any byte but "\n" unless (?s)
	// says so, and \C matches any one byte.
	Regex string

	// Prefix is a RowKeyPrefix's prefix.
	Prefix []byte

	// Family is the family name of a Family filter, and optionally the
	// family a QualifierRange applies to (empty: any family).
	Family string

	// Start and End bound a QualifierRange or ValueRange; both are closed
	// unless StartOpen or EndOpen says so. A nil Start is the empty string
	// (the smallest); a nil End means no upper bound (EndOpen is then
	// ignored), while a non-nil empty End is the empty string.
	Start, End         []byte
	StartOpen, EndOpen bool

	// TimeStart and TimeEnd bound a TimestampRange to [TimeStart, TimeEnd)
	// in microseconds; TimeEnd 0 means no upper bound.
	TimeStart, TimeEnd int64

	// N is the count of CellsPerRowLimit (N >= 1), CellsPerRowOffset
	// (N >= 0) and CellsPerColumnLimit (N >= 1).
	N int

	// Label is a KindLabel's label: 1 to MaxLabelLen characters of
	// [a-z0-9-].
	Label string

	// Probability is a KindRowSample's chance to pass a row, in (0, 1).
	Probability float64
}

// Pass returns a filter that emits every cell.
func Pass() *Filter { return &Filter{Kind: KindPass} }

// Block returns a filter that emits nothing.
func Block() *Filter { return &Filter{Kind: KindBlock} }

// Chain returns a filter applying fs in sequence.
func Chain(fs ...*Filter) *Filter { return &Filter{Kind: KindChain, Filters: fs} }

// Interleave returns a filter merging the outputs of fs.
func Interleave(fs ...*Filter) *Filter { return &Filter{Kind: KindInterleave, Filters: fs} }

// Condition returns a filter applying t when pred emits a cell for the row,
// else f; nil t or f emit nothing.
func Condition(pred, t, f *Filter) *Filter {
	return &Filter{Kind: KindCondition, Predicate: pred, True: t, False: f}
}

// RowKeyRegex returns a filter passing rows whose whole key re matches.
func RowKeyRegex(re string) *Filter { return &Filter{Kind: KindRowKeyRegex, Regex: re} }

// RowKeyPrefix returns a filter passing rows whose key starts with p.
func RowKeyPrefix(p []byte) *Filter { return &Filter{Kind: KindRowKeyPrefix, Prefix: p} }

// FamilyRegex returns a filter passing cells whose whole family name re
// matches.
func FamilyRegex(re string) *Filter { return &Filter{Kind: KindFamilyRegex, Regex: re} }

// Family returns a filter passing the cells of the family named name.
func Family(name string) *Filter { return &Filter{Kind: KindFamily, Family: name} }

// QualifierRegex returns a filter passing cells whose whole qualifier re
// matches.
func QualifierRegex(re string) *Filter { return &Filter{Kind: KindQualifierRegex, Regex: re} }

// QualifierRange returns a filter passing cells of family (any family when
// empty) whose qualifier is in [start, end); a nil end means no bound.
func QualifierRange(family string, start, end []byte) *Filter {
	return &Filter{Kind: KindQualifierRange, Family: family, Start: start, End: end, EndOpen: true}
}

// TimestampRange returns a filter passing cells with a timestamp in
// [start, end) microseconds; end 0 means no bound.
func TimestampRange(start, end int64) *Filter {
	return &Filter{Kind: KindTimestampRange, TimeStart: start, TimeEnd: end}
}

// ValueRegex returns a filter passing cells whose whole value re matches.
func ValueRegex(re string) *Filter { return &Filter{Kind: KindValueRegex, Regex: re} }

// ValueRange returns a filter passing cells whose value is in [start, end);
// a nil end means no bound.
func ValueRange(start, end []byte) *Filter {
	return &Filter{Kind: KindValueRange, Start: start, End: end, EndOpen: true}
}

// CellsPerRowLimit returns a filter passing the first n cells of each row.
func CellsPerRowLimit(n int) *Filter { return &Filter{Kind: KindCellsPerRowLimit, N: n} }

// CellsPerRowOffset returns a filter skipping the first n cells of each row.
func CellsPerRowOffset(n int) *Filter { return &Filter{Kind: KindCellsPerRowOffset, N: n} }

// CellsPerColumnLimit returns a filter passing the first n cells (the
// newest n versions) of each column.
func CellsPerColumnLimit(n int) *Filter { return &Filter{Kind: KindCellsPerColumnLimit, N: n} }

// StripValue returns a filter emptying every cell's value.
func StripValue() *Filter { return &Filter{Kind: KindStripValue} }

// Sink returns a filter sending the cells it receives to the read's
// output, bypassing its parents; it emits nothing to its parent.
func Sink() *Filter { return &Filter{Kind: KindSink} }

// Label returns a filter adding label to every cell it passes.
func Label(label string) *Filter { return &Filter{Kind: KindLabel, Label: label} }

// RowSample returns a filter passing each row whole with probability p.
func RowSample(p float64) *Filter { return &Filter{Kind: KindRowSample, Probability: p} }
