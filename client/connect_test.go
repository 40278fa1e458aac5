package client

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/internal/testkit/fakemaster"
)

// A master that has just started answers UNAVAILABLE until it can check
// credentials (with auth on, until it has read them from etcd): the
// client's first call is retried, as lookups are, instead of failing the
// connect. Twice in a row fits in the default of 4 rounds.
func TestNewClientRetriesAMasterThatIsStarting(t *testing.T) {
	m := fakemaster.Start(t)
	notYet := status.Error(codes.Unavailable, "auth: the credentials are not loaded from etcd yet; retry")
	m.Fail("WhoAmI", notYet, notYet)
	c, err := NewClientWithOptions(context.Background(), Options{Masters: []string{m.Addr()}})
	if err != nil {
		t.Fatalf("NewClient while the master answers UNAVAILABLE twice: %v", err)
	}
	c.Close()
}

// A master that keeps refusing still fails the connect, with what it
// said.
func TestNewClientGivesUpOnAMasterThatStaysUnavailable(t *testing.T) {
	m := fakemaster.Start(t)
	m.SetUnavailable(true)
	_, err := NewClientWithOptions(context.Background(), Options{Masters: []string{m.Addr()}})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("NewClient of a master that stays unavailable: %v, want UNAVAILABLE", err)
	}
}
