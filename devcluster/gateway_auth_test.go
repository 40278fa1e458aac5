package devcluster

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
)

// staticToken is a static token source for the Go Bigtable client over the
// gateway's plaintext port (docs/GATEWAY.md "Security").
type staticToken string

func (t staticToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	if t == "" {
		return nil, nil
	}
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

func (staticToken) RequireTransportSecurity() bool { return false }

// Through the gateway of an Auth cluster every call runs as its caller: a
// read-only token reads and is refused writes, no token is refused, and a
// revoked token is refused as soon as the servers' caches see the
// revocation. The gateway's own client has no rights: nothing is lent.
func TestGatewayRunsEachCallAsItsCaller(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, admin := startWithAdmin(ctx, t, Config{Servers: 1, Auth: true, GatewayAddr: "127.0.0.1:0"})
	if err := admin.Admin().CreateTable(ctx, "gw", []families.Family{families.Default("cf")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := admin.Admin().Grant(ctx, client.Grant{Principal: "reader", Table: "gw", Role: "read"}); err != nil {
		t.Fatal(err)
	}
	readerToken, info, err := admin.Admin().CreateToken(ctx, "reader", "gateway test")
	if err != nil {
		t.Fatal(err)
	}
	plain := grpc.WithTransportCredentials(insecure.NewCredentials())
	bt := func(token string) *bigtable.Table {
		return openBigtable(ctx, t, c.GatewayAddr(), plain, staticToken(token), "gw")
	}
	set := btSet
	firstWrite(ctx, t, "the admin's write through the gateway", bt(c.AdminToken()))
	reader := bt(readerToken)
	if row, err := reader.ReadRow(ctx, "r"); err != nil || len(row["cf"]) != 1 {
		t.Fatalf("the reader's read through the gateway: %v, %v", row, err)
	}
	if err := reader.Apply(ctx, "r", set()); status.Code(err) != codes.PermissionDenied {
		t.Errorf("the reader's write through the gateway: %v, want PERMISSION_DENIED", err)
	}
	if _, err := bt("").ReadRow(ctx, "r"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a read without a token: %v, want UNAUTHENTICATED", err)
	}
	if err := bt("").Apply(ctx, "r", set()); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a write without a token: %v, want UNAUTHENTICATED", err)
	}
	if err := admin.Admin().RevokeToken(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, "a revoked token", codes.Unauthenticated, func() error {
		_, err := reader.ReadRow(ctx, "r")
		return err
	})
}

// waitRefused waits until read fails with code: a revocation reaches the
// servers' caches by etcd watch (docs/OPERATIONS.md "Security":
// milliseconds); it allows 10 seconds.
func waitRefused(t *testing.T, what string, code codes.Code, read func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := read()
		if status.Code(err) == code {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still reads through the gateway after 10s: %v, want %v", what, err, code)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
