package cell

import "encoding/binary"

// MutationKind says what a Mutation does.
type MutationKind uint8

const (
	// SetCell writes one cell.
	SetCell MutationKind = iota + 1
	// DeleteColumn deletes the cells of one column written before it,
	// optionally only those with a timestamp in [TimeStart, TimeEnd).
	DeleteColumn
	// DeleteFamily deletes every cell of one family in the row written
	// before it.
	DeleteFamily
	// DeleteRow deletes every cell of the row written before it.
	DeleteRow
	// AddToCell merges an input (Value: an 8-byte big-endian int64) into
	// the cell at (Family, Qualifier, Timestamp) of an aggregate family
	// (sum, min or max): the cell becomes the aggregate of every input
	// written there and not deleted. Not idempotent.
	AddToCell
	// MergeToCell merges an accumulator state (Value) into the cell at
	// (Family, Qualifier, Timestamp) of an aggregate family, as Bigtable's
	// MergeToCell does. For the int64 sum, min and max that Tabula has, the
	// state is the same 8-byte big-endian int64 an input is, so it merges
	// exactly like AddToCell. Not idempotent.
	MergeToCell
)

func (k MutationKind) String() string {
	switch k {
	case SetCell:
		return "set-cell"
	case DeleteColumn:
		return "delete-column"
	case DeleteFamily:
		return "delete-family"
	case DeleteRow:
		return "delete-row"
	case AddToCell:
		return "add-to-cell"
	case MergeToCell:
		return "merge-to-cell"
	}
	return "unknown"
}

// Mutation is one change to a row. Several mutations of one row applied in
// one request are atomic.
type Mutation struct {
	Kind      MutationKind
	Family    string // all kinds but DeleteRow
	Qualifier []byte // SetCell, DeleteColumn, AddToCell, MergeToCell
	// Timestamp of a SetCell, AddToCell or MergeToCell, in microseconds;
	// ServerTimestamp asks the server's clock (SetCell only: an aggregate
	// cell is named by its timestamp, so the caller gives it).
	Timestamp int64
	// Value of a SetCell; the input of an AddToCell or MergeToCell, an
	// 8-byte big-endian int64 (see AggregateInput).
	Value []byte
	// TimeStart and TimeEnd bound a DeleteColumn to cells with timestamps in
	// [TimeStart, TimeEnd). TimeEnd 0 means no upper bound.
	TimeStart, TimeEnd int64
}

// Validate checks the mutation's fields against the limits of docs/CONTRACTS.md §1.
// It does not know the table's schema; the engine checks the family exists.
func (m *Mutation) Validate() error {
	if m.Kind != DeleteRow {
		if err := ValidateFamilyName(m.Family); err != nil {
			return err
		}
	}
	switch m.Kind {
	case SetCell:
		if err := ValidateQualifier(m.Qualifier); err != nil {
			return err
		}
		if len(m.Value) > MaxValueLen {
			return Invalidf("value of %s:%q is %d bytes; the limit is %d", m.Family, m.Qualifier, len(m.Value), MaxValueLen)
		}
		if m.Timestamp < 0 && m.Timestamp != ServerTimestamp {
			return Invalidf("timestamp %d of %s:%q is negative; give microseconds since the epoch, or -1 for the server's clock", m.Timestamp, m.Family, m.Qualifier)
		}
	case DeleteColumn:
		if err := ValidateQualifier(m.Qualifier); err != nil {
			return err
		}
		if m.TimeStart < 0 || m.TimeEnd < 0 {
			return Invalidf("delete of %s:%q has a negative time range [%d, %d)", m.Family, m.Qualifier, m.TimeStart, m.TimeEnd)
		}
		if m.TimeEnd != 0 && m.TimeEnd <= m.TimeStart {
			return Invalidf("delete of %s:%q has an empty time range [%d, %d); the end must be after the start, or 0 for no end", m.Family, m.Qualifier, m.TimeStart, m.TimeEnd)
		}
	case AddToCell, MergeToCell:
		if err := ValidateQualifier(m.Qualifier); err != nil {
			return err
		}
		if m.Timestamp < 0 {
			return Invalidf("%v of %s:%q has timestamp %d; an aggregate cell needs a timestamp of 0 or more microseconds (the server's clock is not allowed)", m.Kind, m.Family, m.Qualifier, m.Timestamp)
		}
		if len(m.Value) != 8 {
			return Invalidf("%v of %s:%q has a %d-byte input; give an 8-byte big-endian int64", m.Kind, m.Family, m.Qualifier, len(m.Value))
		}
	case DeleteFamily, DeleteRow:
	default:
		return Invalidf("unknown mutation kind %d", m.Kind)
	}
	return nil
}

// ValidateMutations checks a row key and a non-empty list of its mutations.
func ValidateMutations(row []byte, muts []Mutation) error {
	if err := ValidateRow(row); err != nil {
		return err
	}
	if len(muts) == 0 {
		return Invalidf("no mutations for row %q; give at least one", row)
	}
	if len(muts) > MaxMutationsPerRow {
		return Invalidf("%d mutations for row %q; the limit is %d per request: split the row's mutations over several requests", len(muts), row, MaxMutationsPerRow)
	}
	for i := range muts {
		if err := muts[i].Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Idempotent reports whether applying the mutations twice has the same
// effect as once: false when a SetCell asks for the server's clock, or
// when any mutation is an AddToCell or MergeToCell (applied twice, the
// input counts twice). Clients retry only idempotent mutations
// (docs/CONTRACTS.md §5).
func Idempotent(muts []Mutation) bool {
	for i := range muts {
		switch muts[i].Kind {
		case SetCell:
			if muts[i].Timestamp == ServerTimestamp {
				return false
			}
		case AddToCell, MergeToCell:
			return false
		}
	}
	return true
}

// AggregateInput returns the 8-byte big-endian form of n, the Value of an
// AddToCell or MergeToCell.
func AggregateInput(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// RMWKind says what a ReadModifyWriteRule does.
type RMWKind uint8

const (
	// Append appends bytes to the column's newest value (or to empty).
	Append RMWKind = iota + 1
	// Increment adds to the column's newest value read as a 64-bit
	// big-endian signed integer (absent counts as 0).
	Increment
)

// ReadModifyWriteRule is one rule of a ReadModifyWriteRow request.
type ReadModifyWriteRule struct {
	Kind            RMWKind
	Family          string
	Qualifier       []byte
	AppendValue     []byte // Append
	IncrementAmount int64  // Increment
}

// Validate checks the rule's fields.
func (r *ReadModifyWriteRule) Validate() error {
	if err := ValidateFamilyName(r.Family); err != nil {
		return err
	}
	if err := ValidateQualifier(r.Qualifier); err != nil {
		return err
	}
	switch r.Kind {
	case Append:
		if len(r.AppendValue) > MaxValueLen {
			return Invalidf("append value of %s:%q is %d bytes; the limit is %d", r.Family, r.Qualifier, len(r.AppendValue), MaxValueLen)
		}
	case Increment:
	default:
		return Invalidf("unknown read-modify-write rule kind %d", r.Kind)
	}
	return nil
}
