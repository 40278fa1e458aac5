package convert

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// Rows of every shape split into parts no larger than about the budget and
// join back to exactly the same row.
func TestSplitRowJoinsBack(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for iter := 0; iter < 300; iter++ {
		row := &tabulapb.Row{Key: []byte(fmt.Sprint("row", iter))}
		for i := r.Intn(20); i > 0; i-- {
			v := make([]byte, []int{0, 10, 5000, 70000, 300000}[r.Intn(5)])
			r.Read(v)
			c := &tabulapb.Cell{Family: "cf", Qualifier: []byte(fmt.Sprint("q", i)), TimestampMicros: int64(i), Value: v}
			if r.Intn(3) == 0 {
				c.Labels = []string{"label"} // carried by the first piece
			}
			row.Cells = append(row.Cells, c)
		}
		budget := []int{1 << 10, 16 << 10, 64 << 10, 1 << 20}[r.Intn(4)]
		parts := SplitRow(row, budget)
		var j RowJoiner
		var got *tabulapb.Row
		for i, p := range parts {
			if RowSize(p) > max(budget, minPiece+len(p.Key)+64)+64 {
				t.Fatalf("part %d of %d is %d bytes for a budget of %d", i, len(parts), RowSize(p), budget)
			}
			out, err := j.Add(p)
			if err != nil {
				t.Fatal(err)
			}
			if (out != nil) != (i == len(parts)-1) {
				t.Fatalf("part %d of %d: joined row %v", i, len(parts), out != nil)
			}
			got = out
		}
		if !proto.Equal(got, row) {
			t.Fatalf("iteration %d: joined row differs (%d parts)", iter, len(parts))
		}
	}
}

func TestRowJoinerRefusesInterleavedParts(t *testing.T) {
	big := &tabulapb.Row{Key: []byte("a"), Cells: []*tabulapb.Cell{{Family: "cf", Value: bytes.Repeat([]byte("x"), 20000)}}}
	parts := SplitRow(big, 8<<10)
	var j RowJoiner
	if _, err := j.Add(parts[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Add(&tabulapb.Row{Key: []byte("b")}); err == nil {
		t.Fatal("a part of another row was accepted mid-row")
	}
}
