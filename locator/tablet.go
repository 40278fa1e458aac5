package locator

import (
	"bytes"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// Tablet is where one key range of a table lives.
type Tablet struct {
	Table string
	ID    string
	// Start and End bound the tablet's rows: [Start, End). An empty End
	// means the end of the table.
	Start, End []byte
	// Server and Address name the tablet server it is assigned to; both
	// are empty while the tablet is unassigned.
	Server, Address string
	// Epoch increases on every assignment; a server answers only at the
	// current epoch.
	Epoch int64
	// State is "unassigned", "assigned", "serving" or "splitting".
	State string
}

// TabletFromProto converts a TabletInfo.
func TabletFromProto(p *tabulapb.TabletInfo) Tablet {
	return Tablet{
		Table: p.GetTable(), ID: p.GetTabletId(),
		Start: p.GetStartKey(), End: p.GetEndKey(),
		Server: p.GetServerId(), Address: p.GetServerAddress(),
		Epoch: p.GetEpoch(), State: p.GetState(),
	}
}

// Contains reports whether row lies in [Start, End).
func (t Tablet) Contains(row []byte) bool {
	return bytes.Compare(row, t.Start) >= 0 && (len(t.End) == 0 || bytes.Compare(row, t.End) < 0)
}

// Assigned reports whether the tablet has a server to talk to.
func (t Tablet) Assigned() bool { return t.Address != "" && t.State != "unassigned" }

// Ref is the TabletRef a data call to the tablet's server carries.
func (t Tablet) Ref() *tabulapb.TabletRef {
	return &tabulapb.TabletRef{Table: t.Table, TabletId: t.ID, Epoch: t.Epoch}
}

// endsBefore reports whether the tablet ends at or before key (so key is
// not in it nor in anything it covers). An empty End never ends.
func (t Tablet) endsBefore(key []byte) bool {
	return len(t.End) != 0 && bytes.Compare(t.End, key) <= 0
}

// overlaps reports whether t and u share a row.
func (t Tablet) overlaps(u Tablet) bool {
	return !t.endsBefore(u.Start) && !u.endsBefore(t.Start)
}

// sameLocation reports whether t and u are the same tablet at the same
// epoch on the same server.
func (t Tablet) sameLocation(u Tablet) bool {
	return t.Table == u.Table && t.ID == u.ID && t.Epoch == u.Epoch && t.Address == u.Address
}
