package verify_test

import (
	"fmt"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/verify"
)

// A counter was incremented twice with acknowledgement (returning 1 and 2)
// and once with an unknown outcome; the table holds 2. The unknown
// increment was not applied, which is allowed.
func ExampleChecker() {
	row := "00-ctr-demo-00000-0"
	h := &verify.History{
		Sessions: []verify.Session{{Tag: "demo"}},
		Ops: []verify.Op{
			{ID: 1, Kind: verify.KindIncr, Row: row, Outcome: verify.Acked, Value: 1, Call: 10, Return: 20},
			{ID: 2, Kind: verify.KindIncr, Row: row, Outcome: verify.Unknown, Call: 15, Return: 40},
			{ID: 3, Kind: verify.KindIncr, Row: row, Outcome: verify.Acked, Value: 2, Call: 30, Return: 50},
		},
	}
	c := verify.NewChecker(h, verify.CheckOptions{})
	c.Observe(client.Row{Key: []byte(row), Cells: []cell.Cell{
		{Row: []byte(row), Family: "c", Qualifier: []byte("n"), Timestamp: 2, Value: []byte{0, 0, 0, 0, 0, 0, 0, 2}},
		{Row: []byte(row), Family: "c", Qualifier: []byte("n"), Timestamp: 1, Value: []byte{0, 0, 0, 0, 0, 0, 0, 1}},
	}})
	rep := c.Finish()
	fmt.Println("ok:", rep.OK(), "linearizable rows:", rep.LinearizableRows)
	// Output: ok: true linearizable rows: 1
}
