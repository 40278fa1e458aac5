package convert

import (
	"strings"

	"github.com/tabuladb/tabula/cell"
)

// trimInvalid returns err's message without the "cell: invalid argument: " head
// that cell.Invalidf adds, so that re-wrapping it to add a field path does
// not repeat it.
func trimInvalid(err error) string {
	return strings.TrimPrefix(err.Error(), cell.ErrInvalid.Error()+": ")
}
