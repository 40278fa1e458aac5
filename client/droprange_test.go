package client

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestAdminDropRowRange sends a prefix or delete-all to the master,
// retries an UNAVAILABLE answer, and refuses an empty prefix or a bad
// table name without calling.
func TestAdminDropRowRange(t *testing.T) {
	c := newCluster(t, 1)
	adm := c.client(t).Admin()
	ctx := context.Background()
	c.master.Fail("DropRowRange", status.Error(codes.Unavailable, "a tablet is moving"))
	if err := adm.DropRowRange(ctx, "users", []byte("user#17")); err != nil {
		t.Fatal(err)
	}
	if err := adm.DropAllRows(ctx, "users"); err != nil {
		t.Fatal(err)
	}
	if err := adm.DropRowRange(ctx, "users", nil); status.Code(err) != codes.InvalidArgument {
		t.Errorf("empty prefix: %v, want InvalidArgument", err)
	}
	if err := adm.DropAllRows(ctx, "bad name"); status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad table name: %v, want InvalidArgument", err)
	}
	c.master.Fail("DropRowRange", status.Error(codes.PermissionDenied, "not an admin"))
	if err := adm.DropAllRows(ctx, "users"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("refused by the master: %v, want PermissionDenied", err)
	}
	dropped := c.master.Dropped()
	if len(dropped) != 2 {
		t.Fatalf("master got %d drops, want 2: %v", len(dropped), dropped)
	}
	p, all := dropped[0], dropped[1]
	if p.GetTable() != "users" || string(p.GetRowKeyPrefix()) != "user#17" {
		t.Errorf("prefix drop sent %v", p)
	}
	if all.GetTable() != "users" || !all.GetDeleteAllDataFromTable() {
		t.Errorf("drop-all sent %v", all)
	}
}
