package rowfilter

import (
	"strconv"
	"strings"
)

// String renders the filter tree in the filter language of
// docs/FILTERS.md, e.g. chain(family("cf"), cells_per_column_limit(1)).
// Parse reads it back: Parse(f.String()) is f for every filter whose
// fields are those its kind uses (see Filter). Byte strings are Quote'd,
// as the tabula CLI prints keys and values.
func (f *Filter) String() string {
	var b strings.Builder
	f.format(&b)
	return b.String()
}

// Format is f.String(): the filter in the filter language.
func Format(f *Filter) string { return f.String() }

func (f *Filter) format(b *strings.Builder) {
	if f == nil {
		b.WriteString("nil")
		return
	}
	b.WriteString(f.Kind.String())
	b.WriteByte('(')
	switch f.Kind {
	case KindChain, KindInterleave:
		for i, c := range f.Filters {
			if i > 0 {
				b.WriteString(", ")
			}
			c.format(b)
		}
	case KindCondition:
		f.Predicate.format(b)
		b.WriteString(", ")
		f.True.format(b)
		b.WriteString(", ")
		f.False.format(b)
	case KindRowKeyRegex, KindFamilyRegex, KindQualifierRegex, KindValueRegex:
		b.WriteString(strconv.Quote(f.Regex))
	case KindRowKeyPrefix:
		b.WriteString(Quote(f.Prefix))
	case KindFamily:
		b.WriteString(strconv.Quote(f.Family))
	case KindQualifierRange, KindValueRange:
		if f.Kind == KindQualifierRange {
			b.WriteString(strconv.Quote(f.Family))
			b.WriteString(", ")
		}
		f.formatRange(b)
	case KindTimestampRange:
		b.WriteString(strconv.FormatInt(f.TimeStart, 10))
		b.WriteString(", ")
		b.WriteString(strconv.FormatInt(f.TimeEnd, 10))
	case KindCellsPerRowLimit, KindCellsPerRowOffset, KindCellsPerColumnLimit:
		b.WriteString(strconv.Itoa(f.N))
	case KindLabel:
		b.WriteString(strconv.Quote(f.Label))
	case KindRowSample:
		b.WriteString(strconv.FormatFloat(f.Probability, 'g', -1, 64))
	}
	b.WriteByte(')')
}

// formatRange writes a range in interval notation: "[" or "(" for a
// closed or open start, "]" or ")" for a closed or open end, and a nil
// bound left out: ["a", "b"), [, "b"], ["a", ).
func (f *Filter) formatRange(b *strings.Builder) {
	if f.StartOpen {
		b.WriteByte('(')
	} else {
		b.WriteByte('[')
	}
	if f.Start != nil {
		b.WriteString(Quote(f.Start))
	}
	b.WriteString(", ")
	if f.End != nil {
		b.WriteString(Quote(f.End))
	}
	if f.EndOpen {
		b.WriteByte(')')
	} else {
		b.WriteByte(']')
	}
}
