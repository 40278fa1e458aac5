package rowfilter

import (
	"errors"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

func nest(depth int) *Filter {
	f := Pass()
	for i := 1; i < depth; i++ {
		f = Chain(f)
	}
	return f
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name    string
		f       *Filter
		wantErr string
	}{
		{"zero filter", &Filter{}, "filter has unknown kind 0"},
		{"unknown kind", &Filter{Kind: 200}, "unknown kind 200"},
		{"nil child", Chain(Pass(), nil), "filter.filters[1] is nil"},
		{"bad regex", Chain(Pass(), Interleave(QualifierRegex("a("))), `filter.filters[1].filters[0] (qualifier_regex): Regex "a(" does not compile`},
		{"regex that would escape its anchors", RowKeyRegex(`a)|(b`), "does not compile"},
		{"backreference is not RE2", ValueRegex(`(a)\1`), "does not compile"},
		{"\\C inside a class", FamilyRegex(`[\C]`), "does not compile"},
		{"regex too long", ValueRegex(strings.Repeat("a", maxRegexLen+1)), "the limit is"},
		{"condition without predicate", Condition(nil, Pass(), Pass()), "(condition): Predicate is missing"},
		{"bad branch", Condition(Pass(), CellsPerRowLimit(0), nil), "filter.true (cells_per_row_limit): N is 0"},
		{"bad false branch", Condition(Pass(), nil, Family("")), "filter.false (family): Family is empty"},
		{"bad predicate", Condition(TimestampRange(-1, 0), nil, nil), "filter.predicate (timestamp_range): TimeStart -1"},
		{"family name invalid", Family("a:b"), "not a family name"},
		{"qualifier range family invalid", QualifierRange("bad name", nil, nil), "not a family name"},
		{"negative end", TimestampRange(0, -1), "negative"},
		{"row limit zero", CellsPerRowLimit(0), "at least 1"},
		{"column limit negative", CellsPerColumnLimit(-3), "N is -3"},
		{"offset negative", CellsPerRowOffset(-1), "at least 0"},
		{"prefix too long", RowKeyPrefix(make([]byte, cell.MaxRowKeyLen+1)), "Prefix is 4097 bytes"},
		{"too deep", nest(MaxDepth + 1), "more than 64 deep"},
		{"stray field", &Filter{Kind: KindFamily, Family: "a", Regex: "b"}, "field Regex is set but a family filter does not use it"},
		{"stray children", &Filter{Kind: KindPass, Filters: []*Filter{Pass()}}, "field Filters is set"},
		{"stray N", &Filter{Kind: KindStripValue, N: 1}, "field N is set"},
		{"stray condition", &Filter{Kind: KindChain, True: Pass()}, "field Predicate/True/False"},
		{"stray range on value regex", &Filter{Kind: KindValueRegex, Regex: "a", EndOpen: true}, "field Start/End"},
		{"stray time", &Filter{Kind: KindValueRange, TimeEnd: 3}, "field TimeStart/TimeEnd"},
		{"stray family on value range", &Filter{Kind: KindValueRange, Family: "a"}, "field Family"},
		{"stray prefix", &Filter{Kind: KindBlock, Prefix: []byte("p")}, "field Prefix"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compile(tc.f)
			if err == nil {
				t.Fatalf("Compile = %v, nil error; want %q", c, tc.wantErr)
			}
			if !errors.Is(err, cell.ErrInvalid) {
				t.Errorf("error %v does not wrap cell.ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Compile error\n got %q\nwant it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestCompileValid(t *testing.T) {
	for _, f := range []*Filter{
		nest(MaxDepth),
		RowKeyPrefix(nil),
		QualifierRange("", nil, nil),
		ValueRange(nil, nil),
		TimestampRange(0, 0),
		TimestampRange(5, 5),
		TimestampRange(10, 5), // empty, as in the emulator
		CellsPerRowOffset(0),
		Condition(Pass(), nil, nil),
		FamilyRegex(`\Q\C\E`),
	} {
		if _, err := Compile(f); err != nil {
			t.Errorf("Compile(%+v) = %v", f, err)
		}
	}
}

func TestFilterString(t *testing.T) {
	f := Chain(Family("cf"), Condition(QualifierRegex(`a\d`), nil, StripValue()),
		QualifierRange("cf", []byte("a"), nil), ValueRange([]byte("x"), []byte("y")), TimestampRange(1, 2), CellsPerColumnLimit(1))
	want := `chain(family("cf"), condition(qualifier_regex("a\\d"), nil, strip_value()), qualifier_range("cf", ["a", )), value_range(["x", "y")), timestamp_range(1, 2), cells_per_column_limit(1))`
	if got := f.String(); got != want {
		t.Errorf("String()\n got %s\nwant %s", got, want)
	}
}
