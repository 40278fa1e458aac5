package rowfilter

import (
	"fmt"
	"strconv"
	"strings"
)

// String renders the filter tree for logs and errors, e.g.
// chain(family("cf"), cells_per_column_limit(1)).
func (f *Filter) String() string {
	var b strings.Builder
	f.format(&b)
	return b.String()
}

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
		b.WriteString(strconv.Quote(string(f.Prefix)))
	case KindFamily:
		b.WriteString(strconv.Quote(f.Family))
	case KindQualifierRange, KindValueRange:
		if f.Kind == KindQualifierRange {
			fmt.Fprintf(b, "%q, ", f.Family)
		}
		if f.StartOpen {
			b.WriteByte('(')
		} else {
			b.WriteByte('[')
		}
		if f.Start != nil {
			b.WriteString(strconv.Quote(string(f.Start)))
		}
		b.WriteString(", ")
		switch {
		case f.End == nil:
			b.WriteString("∞)")
		case f.EndOpen:
			fmt.Fprintf(b, "%q)", f.End)
		default:
			fmt.Fprintf(b, "%q]", f.End)
		}
	case KindTimestampRange:
		fmt.Fprintf(b, "%d, %d", f.TimeStart, f.TimeEnd)
	case KindCellsPerRowLimit, KindCellsPerRowOffset, KindCellsPerColumnLimit:
		b.WriteString(strconv.Itoa(f.N))
	case KindLabel:
		b.WriteString(strconv.Quote(f.Label))
	case KindRowSample:
		b.WriteString(strconv.FormatFloat(f.Probability, 'g', -1, 64))
	}
	b.WriteByte(')')
}
