package meta

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
)

func TestLayoutKeys(t *testing.T) {
	l := NewLayout("")
	cases := []struct{ got, want string }{
		{l.ElectionPrefix(), "/tabula/default/master/election/"},
		{l.ServerKey("s1"), "/tabula/default/servers/s1"},
		{l.TableKey("users"), "/tabula/default/tables/users"},
		{l.TabletKey("users", "ab"), "/tabula/default/tablets/users/ab"},
		{l.AllTabletsPrefix(), "/tabula/default/tablets/"},
		{NewLayout("c2").TablesPrefix(), "/tabula/c2/tables/"},
		{WithPrefix("/x").ServersPrefix(), "/x/servers/"},
		{Layout{}.ServersPrefix(), "/tabula/default/servers/"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if tb, id, ok := l.TabletFromKey(l.TabletKey("users", "ab")); !ok || tb != "users" || id != "ab" {
		t.Errorf("TabletFromKey = %q %q %v", tb, id, ok)
	}
	if _, _, ok := l.TabletFromKey(l.TabletsPrefix("users")); ok {
		t.Error("TabletFromKey accepted a key without an id")
	}
	if id, ok := l.ServerIDFromKey(l.ServerKey("s-9")); !ok || id != "s-9" {
		t.Errorf("ServerIDFromKey = %q %v", id, ok)
	}
	if name, ok := l.TableFromKey(l.TableKey("t.1")); !ok || name != "t.1" {
		t.Errorf("TableFromKey = %q %v", name, ok)
	}
	if _, ok := l.TableFromKey("/elsewhere/tables/x"); ok {
		t.Error("TableFromKey accepted a foreign key")
	}
}

func TestTabletRoundTripAndRange(t *testing.T) {
	r := TabletRecord{Table: "t", ID: NewTabletID(), Start: []byte("b"), End: []byte("m\x00\xff"), State: StateAssigned, Server: "s1", Address: "127.0.0.1:1", Epoch: 7, Parent: "p"}
	got, err := DecodeTablet([]byte(EncodeTablet(r)))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != r.ID || !bytes.Equal(got.Start, r.Start) || !bytes.Equal(got.End, r.End) || got.Epoch != 7 || got.Parent != "p" || got.Address != r.Address {
		t.Fatalf("round trip: got %+v want %+v", got, r)
	}
	for _, c := range []struct {
		row  string
		want bool
	}{{"a", false}, {"b", true}, {"c", true}, {"m", true}, {"m\x00\xff", false}, {"z", false}} {
		if got := r.Contains([]byte(c.row)); got != c.want {
			t.Errorf("Contains(%q) = %v", c.row, got)
		}
	}
	open := TabletRecord{Table: "t", ID: "x"}
	if !open.Contains([]byte("\xff\xff")) || !open.Overlaps([]byte("q"), nil) {
		t.Error("an unbounded tablet must contain everything")
	}
	if r.Overlaps([]byte("m\x00\xff"), nil) || r.Overlaps(nil, []byte("b")) || !r.Overlaps(nil, []byte("b\x00")) {
		t.Error("Overlaps is wrong at the edges")
	}
	p := r.ToProto()
	back := TabletFromProto(p)
	if back.ID != r.ID || back.Epoch != r.Epoch || back.Server != r.Server || !bytes.Equal(back.End, r.End) {
		t.Errorf("proto round trip: %+v", back)
	}
	if a, b := NewTabletID(), NewTabletID(); a == b || len(a) != 16 {
		t.Errorf("NewTabletID gave %q and %q", a, b)
	}
}

func TestDecodeRejectsBadRecords(t *testing.T) {
	bad := []string{``, `{`, `{"table":"t"}`, `{"table":"t","id":"x","start":"Yg==","end":"YQ=="}`, `{"table":"t","id":"x","epoch":-1}`, `[]`}
	for _, b := range bad {
		if _, err := DecodeTablet([]byte(b)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeTablet(%q) = %v, want ErrCorrupt", b, err)
		}
	}
	if _, err := DecodeServer([]byte(`{"id":"s"}`)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DecodeServer without address: %v", err)
	}
	if _, err := DecodeTable([]byte(`{"families":[]}`)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DecodeTable without name: %v", err)
	}
}

func TestTableAndServerRoundTrip(t *testing.T) {
	s := &tabulapb.TableSchema{Name: "users", SplitThresholdBytes: 1 << 20, State: TableEnabled,
		Families: []*tabulapb.Family{{Name: "cf", MaxVersions: 3, TtlMicros: 1e6, Compression: tabulapb.Compression_COMPRESSION_SNAPPY}}}
	got, err := DecodeTable([]byte(EncodeTable(TableRecord{Schema: s})))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got.Schema, s) {
		t.Fatalf("got %v want %v", got.Schema, s)
	}
	sr := ServerRecord{ID: "s1", Address: "127.0.0.1:5", StartTime: 42}
	gs, err := DecodeServer([]byte(EncodeServer(sr)))
	if err != nil || gs != sr {
		t.Fatalf("server round trip: %+v %v", gs, err)
	}
}

func FuzzDecodeTablet(f *testing.F) {
	f.Add([]byte(EncodeTablet(TabletRecord{Table: "t", ID: "x", Start: []byte("a"), End: []byte("b"), Epoch: 1})))
	f.Add([]byte(`{"table":"t","id":"x","start":null}`))
	f.Add([]byte(`{"table":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeTablet(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := DecodeTablet([]byte(EncodeTablet(r)))
		if err != nil || again.ID != r.ID || !bytes.Equal(again.Start, r.Start) || !bytes.Equal(again.End, r.End) {
			t.Fatalf("re-encoding %+v: %+v %v", r, again, err)
		}
	})
}

func FuzzDecodeServer(f *testing.F) {
	f.Add([]byte(EncodeServer(ServerRecord{ID: "s", Address: "a:1", StartTime: 3})))
	f.Add([]byte(`{"id":""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeServer(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if again, err := DecodeServer([]byte(EncodeServer(r))); err != nil || again != r {
			t.Fatalf("re-encoding %+v: %+v %v", r, again, err)
		}
	})
}

func FuzzDecodeTable(f *testing.F) {
	f.Add([]byte(EncodeTable(TableRecord{Schema: &tabulapb.TableSchema{Name: "t", Families: []*tabulapb.Family{{Name: "cf"}}}})))
	f.Add([]byte(`{"name":"t","families":[{"name":"x","gc":"GC_INTERSECTION"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeTable(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := DecodeTable([]byte(EncodeTable(r)))
		if err != nil || !proto.Equal(again.Schema, r.Schema) {
			t.Fatalf("re-encoding %v: %v %v", r.Schema, again.Schema, err)
		}
	})
}
