package cell

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Limits from docs/CONTRACTS.md §1.
const (
	MaxRowKeyLen    = 4096
	MaxQualifierLen = 16 << 10
	MaxValueLen     = 64 << 20
	// MaxMutationsPerRow bounds the mutations of one row in one request
	// (Cloud Bigtable's limit): a row's mutations are applied atomically,
	// so they are held, logged and inserted as one unit.
	MaxMutationsPerRow = 100_000
	// MaxTimestamp is the largest timestamp a cell may carry.
	MaxTimestamp = math.MaxInt64
	// ServerTimestamp in a SetCell mutation asks the tablet server to stamp
	// the cell with its own clock.
	ServerTimestamp int64 = -1
)

// ErrInvalid marks a request that breaks a limit or a naming rule. Errors
// wrapping it say which field is wrong; the RPC layer maps it to
// INVALID_ARGUMENT.
var ErrInvalid = errors.New("cell: invalid argument")

// Invalidf returns an error wrapping ErrInvalid.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Cell is one versioned value, as reads return it.
type Cell struct {
	Row       []byte
	Family    string
	Qualifier []byte
	Timestamp int64 // microseconds since the Unix epoch
	Value     []byte
	// Labels are what apply_label_transformer filters put on this copy of
	// the cell (rowfilter); read output only, never stored. Compare
	// ignores them. Cells handed out by a read may share the slice: treat
	// it as read-only.
	Labels []string
}

// Compare orders cells as reads return them: row, family, qualifier
// ascending, then timestamp descending.
func Compare(a, b *Cell) int {
	if c := bytes.Compare(a.Row, b.Row); c != 0 {
		return c
	}
	if a.Family != b.Family {
		if a.Family < b.Family {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(a.Qualifier, b.Qualifier); c != 0 {
		return c
	}
	switch {
	case a.Timestamp > b.Timestamp:
		return -1
	case a.Timestamp < b.Timestamp:
		return 1
	}
	return 0
}

// validName reports whether name is 1 to max characters of
// [A-Za-z0-9_.-]. A loop rather than a regexp: family names are checked on
// every mutation, and the regexp was a visible share of a write's cost.
func validName(name string, max int) bool {
	if len(name) == 0 || len(name) > max {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// ValidateTableName checks a table name (docs/CONTRACTS.md §1): a plain
// name, 1 to 50 characters of [A-Za-z0-9_.-], not starting with "." or "-"
// (as Cloud Bigtable and HBase require), in the default namespace, or
// "NS:NAME" with NS a namespace name (ValidateNamespaceName) other than
// "default" (whose tables are named without a prefix: CanonicalTableName).
// A name is so always one plain path element, never "." or "..". This is
// the one check of table names: the master, the tablet servers, the
// storage paths and the clients all call it.
func ValidateTableName(name string) error {
	ns, t, qualified := strings.Cut(name, ":")
	if !qualified {
		return validatePlainTable(name)
	}
	if ns == DefaultNamespace {
		return Invalidf("table name %q: the default namespace's tables are named without a prefix; write %q", name, t)
	}
	if msg := namespaceProblem(ns); msg != "" {
		return Invalidf("table name %q: %s", name, msg)
	}
	if !validName(t, 50) || t[0] == '.' || t[0] == '-' {
		return Invalidf("table name %q: the name after the namespace must be 1 to 50 characters of A-Z a-z 0-9 _ . - starting with a letter, digit or _", name)
	}
	return nil
}

func validatePlainTable(name string) error {
	if !validName(name, 50) || name[0] == '.' || name[0] == '-' {
		return Invalidf("table name %q must be 1 to 50 characters of A-Z a-z 0-9 _ . - starting with a letter, digit or _ (or NAMESPACE:NAME)", name)
	}
	return nil
}

// ValidateFamilyName checks a family name against [A-Za-z0-9_.-]{1,64}.
func ValidateFamilyName(name string) error {
	if !validName(name, 64) {
		return Invalidf("family name %q must be 1 to 64 characters of A-Z a-z 0-9 _ . -", name)
	}
	return nil
}

// ValidateRow checks a row key's length (1..4096 bytes).
func ValidateRow(row []byte) error {
	if len(row) == 0 {
		return Invalidf("row key is empty; a row key is 1 to %d bytes", MaxRowKeyLen)
	}
	if len(row) > MaxRowKeyLen {
		return Invalidf("row key is %d bytes; the limit is %d", len(row), MaxRowKeyLen)
	}
	return nil
}

// ValidateQualifier checks a qualifier's length (0..16384 bytes).
func ValidateQualifier(q []byte) error {
	if len(q) > MaxQualifierLen {
		return Invalidf("qualifier is %d bytes; the limit is %d", len(q), MaxQualifierLen)
	}
	return nil
}
