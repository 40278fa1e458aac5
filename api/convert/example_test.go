package convert_test

import (
	"fmt"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/rowfilter"
)

func ExampleFilterFromProto() {
	p := convert.FilterToProto(rowfilter.Chain(rowfilter.Family("cf"), rowfilter.CellsPerColumnLimit(1)))
	f, err := convert.FilterFromProto(p)
	if err != nil {
		panic(err)
	}
	fmt.Println(f.Kind, f.Filters[0].Kind, f.Filters[1].Kind, f.Filters[1].N)
	// Output: chain family cells_per_column_limit 1
}
