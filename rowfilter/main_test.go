package rowfilter

import (
	"testing"

	"github.com/tabuladb/tabula/cell"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type cellT = cell.Cell

func validFamily(s string) bool { return cell.ValidateFamilyName(s) == nil }
