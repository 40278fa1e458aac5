package cell

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
	}
	return "unknown"
}

// Mutation is one change to a row. Several mutations of one row applied in
// one request are atomic.
type Mutation struct {
	Kind      MutationKind
	Family    string // all kinds but DeleteRow
	Qualifier []byte // SetCell, DeleteColumn
	// Timestamp of a SetCell, in microseconds; ServerTimestamp asks the
	// server's clock.
	Timestamp int64
	Value     []byte // SetCell
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
// effect as once: true unless a SetCell asks for the server's clock. Clients
// retry only idempotent mutations (docs/CONTRACTS.md §5).
func Idempotent(muts []Mutation) bool {
	for i := range muts {
		if muts[i].Kind == SetCell && muts[i].Timestamp == ServerTimestamp {
			return false
		}
	}
	return true
}

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
