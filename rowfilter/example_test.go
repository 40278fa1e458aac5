package rowfilter_test

import (
	"fmt"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/rowfilter"
)

func Example() {
	row := []byte("user#42")
	cells := []cell.Cell{ // in read order
		{Row: row, Family: "info", Qualifier: []byte("email"), Timestamp: 20, Value: []byte("new@example.com")},
		{Row: row, Family: "info", Qualifier: []byte("email"), Timestamp: 10, Value: []byte("old@example.com")},
		{Row: row, Family: "info", Qualifier: []byte("name"), Timestamp: 10, Value: []byte("Ada")},
		{Row: row, Family: "logs", Qualifier: []byte("login"), Timestamp: 30, Value: []byte("ok")},
	}

	// The newest version of each info column, if the user has logged in.
	f := rowfilter.Condition(
		rowfilter.Chain(rowfilter.Family("logs"), rowfilter.QualifierRegex("login")),
		rowfilter.Chain(rowfilter.Family("info"), rowfilter.CellsPerColumnLimit(1)),
		nil,
	)
	c, err := rowfilter.Compile(f)
	if err != nil {
		panic(err)
	}
	for _, out := range c.Apply(row, cells) {
		fmt.Printf("%s:%s = %s\n", out.Family, out.Qualifier, out.Value)
	}
	names, restricted := c.Families()
	fmt.Println(len(names), names["info"], names["logs"], restricted)
	fmt.Println(c.RowMayMatch(row))

	_, err = rowfilter.Compile(rowfilter.QualifierRegex("a("))
	fmt.Println(err)
	// Output:
	// info:email = new@example.com
	// info:name = Ada
	// 2 true true true
	// true
	// cell: invalid argument: filter (qualifier_regex): Regex "a(" does not compile as RE2: error parsing regexp: missing closing ): `a(`
}
