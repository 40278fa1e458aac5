package locator

// The fake master these tests locate through is internal/testkit/fakemaster;
// this file holds what they build on it.

import (
	"net"
	"testing"

	"github.com/tabuladb/tabula/api/tabulapb"
)

func tablet(id, start, end, addr string, epoch int64) *tabulapb.TabletInfo {
	state := "assigned"
	if addr == "" {
		state = "unassigned"
	}
	return &tabulapb.TabletInfo{TabletId: id, StartKey: []byte(start), EndKey: []byte(end),
		ServerId: "s-" + addr, ServerAddress: addr, Epoch: epoch, State: state}
}

// deadAddress returns an address nothing listens on.
func deadAddress(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

func newLocator(t *testing.T, addrs ...string) *Locator {
	t.Helper()
	l, err := New(addrs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
