package e2e

import (
	"errors"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

// TestCheckLoadRowCatchesBadRows keeps the e2e checker honest: it accepts
// exactly the load's two cells and reports absent, half-applied and wrong
// rows. It starts no processes and runs under -short.
func TestCheckLoadRowCatchesBadRows(t *testing.T) {
	const row = "3/w01/000007"
	full := []cell.Cell{
		{Row: []byte(row), Family: famA, Qualifier: qual, Timestamp: writeTS, Value: valueOf(famA, row)},
		{Row: []byte(row), Family: famB, Qualifier: qual, Timestamp: writeTS, Value: valueOf(famB, row)},
	}
	wrongValue := append([]cell.Cell(nil), full...)
	wrongValue[1].Value = valueOf(famB, "other")
	wrongTS := append([]cell.Cell(nil), full...)
	wrongTS[0].Timestamp = writeTS + 1
	for _, tc := range []struct {
		name   string
		cells  []cell.Cell
		ok     bool
		absent bool
	}{
		{name: "full row", cells: full, ok: true},
		{name: "absent", cells: nil, absent: true},
		{name: "only family a (half-applied)", cells: full[:1]},
		{name: "only family b (half-applied)", cells: full[1:]},
		{name: "duplicated cell", cells: append(append([]cell.Cell(nil), full...), full[1])},
		{name: "wrong value", cells: wrongValue},
		{name: "wrong timestamp", cells: wrongTS},
		{name: "families swapped", cells: []cell.Cell{full[1], full[0]}},
	} {
		err := checkLoadRow(row, tc.cells)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.absent && !errors.Is(err, errAbsent):
			t.Errorf("%s: %v, want errAbsent", tc.name, err)
		case !tc.ok && !tc.absent && (err == nil || errors.Is(err, errAbsent)):
			t.Errorf("%s: %v, want a description of the damage", tc.name, err)
		}
	}
}

// TestSameCells checks the scan comparison used while tablets move.
func TestSameCells(t *testing.T) {
	want := scanCells("r00001")
	if !sameCells(scanCells("r00001"), want) {
		t.Error("identical cells compare unequal")
	}
	if sameCells(scanCells("r00002"), want) {
		t.Error("cells of another row compare equal")
	}
	if sameCells(want[:2], want) {
		t.Error("a missing cell goes unnoticed")
	}
	if sameCells([]cell.Cell{want[1], want[0], want[2]}, want) {
		t.Error("versions out of order go unnoticed")
	}
}
