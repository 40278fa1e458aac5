package tabletserver

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// cloneMessage returns a deep copy of m for the other side of an
// in-process call (inprocess.go). ReadRowsResponse, the message a scan
// sends by the thousand, is copied by hand into three allocations (rows,
// cells, one buffer for every key, qualifier and value): proto.Clone
// copies it field by field through reflection, a new slice per byte
// field, and took 7% of the CPU of point reads through the gateway.
// Everything else goes through proto.Clone.
func cloneMessage(m proto.Message) proto.Message {
	if r, ok := m.(*tabulapb.ReadRowsResponse); ok {
		if c, ok := cloneReadRowsResponse(r); ok {
			return c
		}
	}
	return proto.Clone(m)
}

// cloneReadRowsResponse copies m, or reports false when m holds unknown
// fields (it never does when a server built it), which only proto.Clone
// copies. TestCloneReadRowsResponseCoversEveryField fails when a field is
// added to ReadRowsResponse, Row or Cell that the copy does not know.
func cloneReadRowsResponse(m *tabulapb.ReadRowsResponse) (*tabulapb.ReadRowsResponse, bool) {
	if hasUnknown(m) {
		return nil, false
	}
	cells, size := 0, 0
	for _, r := range m.Rows {
		if hasUnknown(r) {
			return nil, false
		}
		cells += len(r.Cells)
		size += len(r.Key)
		for _, c := range r.Cells {
			if hasUnknown(c) {
				return nil, false
			}
			size += len(c.Qualifier) + len(c.Value)
		}
	}
	out := &tabulapb.ReadRowsResponse{}
	if m.Rows == nil {
		return out, true
	}
	rows := make([]tabulapb.Row, len(m.Rows))
	cellSlab := make([]tabulapb.Cell, cells)
	cellPtrs := make([]*tabulapb.Cell, cells)
	buf := make([]byte, 0, size)
	dup := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		n := len(buf)
		buf = append(buf, b...)
		return buf[n:len(buf):len(buf)]
	}
	out.Rows = make([]*tabulapb.Row, len(m.Rows))
	for i, r := range m.Rows {
		nr := &rows[i]
		nr.Key, nr.Continued = dup(r.Key), r.Continued
		if r.Cells != nil {
			nr.Cells = cellPtrs[:len(r.Cells):len(r.Cells)]
			cellPtrs = cellPtrs[len(r.Cells):]
			for j, c := range r.Cells {
				nc := &cellSlab[0]
				cellSlab = cellSlab[1:]
				nc.Family, nc.Qualifier, nc.TimestampMicros = c.Family, dup(c.Qualifier), c.TimestampMicros
				nc.Value, nc.ValueContinues = dup(c.Value), c.ValueContinues
				if c.Labels != nil {
					nc.Labels = append([]string(nil), c.Labels...) // strings are immutable
				}
				nr.Cells[j] = nc
			}
		}
		out.Rows[i] = nr
	}
	return out, true
}

func hasUnknown(m proto.Message) bool { return len(m.ProtoReflect().GetUnknown()) > 0 }

// moveInto gives the fields of src, a clone nobody else holds, to dst, a
// new message of the same type: the receiving side takes the clone over
// instead of copying it again. A ReadRowsResponse moves its one field
// directly; other messages field by field through reflection.
func moveInto(dst, src proto.Message) {
	if d, ok := dst.(*tabulapb.ReadRowsResponse); ok {
		if s, ok := src.(*tabulapb.ReadRowsResponse); ok && !hasUnknown(s) {
			proto.Reset(d)
			d.Rows = s.Rows
			return
		}
	}
	d, s := dst.ProtoReflect(), src.ProtoReflect()
	if d.Descriptor() != s.Descriptor() {
		proto.Merge(dst, src)
		return
	}
	proto.Reset(dst)
	s.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		d.Set(fd, v)
		return true
	})
	if u := s.GetUnknown(); len(u) > 0 {
		d.SetUnknown(u)
	}
}
