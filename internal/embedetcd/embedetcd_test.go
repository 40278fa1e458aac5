package embedetcd

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestStartPutGetRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	put := func(srv *Server) {
		cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		if _, err := cli.Put(ctx, "k", "v"); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := Start(ctx, Config{Dir: dir, NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	put(srv)
	srv.Close()
	// Data survives a restart in the same folder.
	srv, err = Start(ctx, Config{Dir: dir, NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after restart: %v %v", resp, err)
	}
}
