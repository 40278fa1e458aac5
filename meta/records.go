package meta

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/corruption"
)

// Sentinel errors; check them with errors.Is.
var (
	// ErrCorrupt marks a value under the layout that does not decode. It
	// wraps corruption.ErrCorrupt.
	ErrCorrupt = corruption.New("meta: corrupt record")
	// ErrConflict means a guarded transaction lost a race: the key changed
	// since it was read. Re-read and retry, or give up.
	ErrConflict = errors.New("meta: conflicting update")
	// ErrNotFound means the key does not exist.
	ErrNotFound = errors.New("meta: not found")
)

// Tablet states.
const (
	// StateUnassigned: no server holds the tablet; the master will assign it.
	StateUnassigned = "unassigned"
	// StateAssigned: Server and Epoch are set and the server is told to load it.
	StateAssigned = "assigned"
	// StateServing: the server reported the tablet loaded (optional).
	StateServing = "serving"
	// StateSplitting: the owner is splitting the tablet.
	StateSplitting = "splitting"
)

// Table states.
const (
	TableEnabled  = "enabled"
	TableDeleting = "deleting"
)

// ServerRecord is the value of servers/<id>; the key is bound to the
// server's lease, so its presence means the server is alive.
type ServerRecord struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	// StartTime is when the server registered, in µs since the Unix epoch
	// (informational: ownership is decided by Lease, never by a time).
	StartTime int64 `json:"start_time"`
	// Lease is the etcd lease the key is bound to: the identity of this
	// registration. A server that registers again gets a new lease and owns
	// nothing assigned under its old one (docs/OWNERSHIP.md).
	Lease int64 `json:"lease,omitempty"`
}

// TabletRecord is the value of tablets/<table>/<id>.
type TabletRecord struct {
	Table string `json:"table"`
	ID    string `json:"id"`
	// Start is the inclusive first row; empty means the start of the table.
	Start []byte `json:"start,omitempty"`
	// End is the exclusive end row; empty means the end of the table.
	End   []byte `json:"end,omitempty"`
	State string `json:"state"`
	// Server and Address name the owner while State is assigned, serving
	// or splitting.
	Server  string `json:"server,omitempty"`
	Address string `json:"address,omitempty"`
	// Epoch increases on every new assignment.
	Epoch int64 `json:"epoch"`
	// Lease is the etcd lease of the owner's registration when the tablet
	// was assigned (or split) to it: the owner may serve the tablet only
	// while it holds exactly this lease, and the master hands the tablet on
	// only once this lease has expired or the owner confirmed an unload
	// (docs/OWNERSHIP.md). Zero while unassigned.
	Lease int64 `json:"lease,omitempty"`
	// Parent is the id of the tablet this one was split from, if any.
	Parent string `json:"parent,omitempty"`
	// MergedFrom are the ids of the two tablets this one was merged from
	// (left, right), if any.
	MergedFrom []string `json:"merged_from,omitempty"`
	// Fresh marks a tablet created empty by CreateTable whose files do not
	// exist yet: its first owner creates them, and clears Fresh before it
	// serves anything. A tablet that is not fresh and has no files has
	// lost its data; it is never recreated empty.
	Fresh bool `json:"fresh,omitempty"`
}

// TableRecord is the value of tables/<name>.
type TableRecord struct {
	Schema *tabulapb.TableSchema
}

// NewTabletID returns a random, filesystem-safe tablet id of 16 hex digits.
func NewTabletID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("meta: reading random bytes: %v", err)) // crypto/rand never fails on supported systems
	}
	return hex.EncodeToString(b[:])
}

// Contains reports whether row falls in [Start, End).
func (t *TabletRecord) Contains(row []byte) bool {
	return bytes.Compare(row, t.Start) >= 0 && (len(t.End) == 0 || bytes.Compare(row, t.End) < 0)
}

// Overlaps reports whether the tablet overlaps [start, end); an empty end
// means unbounded.
func (t *TabletRecord) Overlaps(start, end []byte) bool {
	if len(end) > 0 && bytes.Compare(t.Start, end) >= 0 {
		return false
	}
	return len(t.End) == 0 || bytes.Compare(start, t.End) < 0
}

// ToProto converts the record to the RPC form.
func (t *TabletRecord) ToProto() *tabulapb.TabletInfo {
	return &tabulapb.TabletInfo{
		Table:         t.Table,
		TabletId:      t.ID,
		StartKey:      t.Start,
		EndKey:        t.End,
		ServerId:      t.Server,
		ServerAddress: t.Address,
		Epoch:         t.Epoch,
		State:         t.State,
	}
}

// TabletFromProto converts the RPC form to a record (Parent and Lease are
// not carried).
func TabletFromProto(p *tabulapb.TabletInfo) TabletRecord {
	return TabletRecord{
		Table:   p.GetTable(),
		ID:      p.GetTabletId(),
		Start:   p.GetStartKey(),
		End:     p.GetEndKey(),
		Server:  p.GetServerId(),
		Address: p.GetServerAddress(),
		Epoch:   p.GetEpoch(),
		State:   p.GetState(),
	}
}

// SortTablets orders tablets by start key.
func SortTablets(ts []TabletRecord) {
	sort.Slice(ts, func(i, j int) bool { return bytes.Compare(ts[i].Start, ts[j].Start) < 0 })
}

func (t *TabletRecord) validate() error {
	if t.Table == "" || t.ID == "" {
		return fmt.Errorf("%w: tablet without table or id", ErrCorrupt)
	}
	if len(t.End) > 0 && bytes.Compare(t.Start, t.End) >= 0 {
		return fmt.Errorf("%w: tablet %s/%s has start %q >= end %q", ErrCorrupt, t.Table, t.ID, t.Start, t.End)
	}
	if t.Lease < 0 {
		return fmt.Errorf("%w: tablet %s/%s has negative lease %d", ErrCorrupt, t.Table, t.ID, t.Lease)
	}
	if t.Epoch < 0 {
		return fmt.Errorf("%w: tablet %s/%s has negative epoch %d", ErrCorrupt, t.Table, t.ID, t.Epoch)
	}
	return nil
}

// EncodeTablet returns the JSON value stored under TabletKey.
func EncodeTablet(r TabletRecord) string { return mustJSON(r) }

// DecodeTablet parses a value stored under TabletKey.
func DecodeTablet(b []byte) (TabletRecord, error) {
	var r TabletRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return TabletRecord{}, fmt.Errorf("%w: tablet: %v", ErrCorrupt, err)
	}
	if err := r.validate(); err != nil {
		return TabletRecord{}, err
	}
	return r, nil
}

// EncodeServer returns the JSON value stored under ServerKey.
func EncodeServer(r ServerRecord) string { return mustJSON(r) }

// DecodeServer parses a value stored under ServerKey.
func DecodeServer(b []byte) (ServerRecord, error) {
	var r ServerRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return ServerRecord{}, fmt.Errorf("%w: server: %v", ErrCorrupt, err)
	}
	if r.ID == "" || r.Address == "" {
		return ServerRecord{}, fmt.Errorf("%w: server record without id or address", ErrCorrupt)
	}
	return r, nil
}

// EncodeTable returns the protojson value stored under TableKey.
func EncodeTable(r TableRecord) string {
	b, err := protojson.Marshal(r.Schema)
	if err != nil {
		panic(fmt.Sprintf("meta: encoding table schema: %v", err)) // a valid message always marshals
	}
	return string(b)
}

// DecodeTable parses a value stored under TableKey.
func DecodeTable(b []byte) (TableRecord, error) {
	s := &tabulapb.TableSchema{}
	if err := protojson.Unmarshal(b, s); err != nil {
		return TableRecord{}, fmt.Errorf("%w: table: %v", ErrCorrupt, err)
	}
	if s.GetName() == "" {
		return TableRecord{}, fmt.Errorf("%w: table schema without a name", ErrCorrupt)
	}
	return TableRecord{Schema: s}, nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("meta: encoding %T: %v", v, err)) // plain structs always marshal
	}
	return string(b)
}
