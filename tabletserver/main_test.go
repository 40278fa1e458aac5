package tabletserver

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/tabuladb/tabula/internal/embedetcd"
)

// testEtcd is the package's embedded etcd; every test uses its own cluster
// prefix in it.
var testEtcd *embedetcd.Server

type withEtcd struct{ m *testing.M }

func (w withEtcd) Run() int {
	dir, err := os.MkdirTemp("", "tabletserver-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv, err := embedetcd.Start(context.Background(), embedetcd.Config{Dir: dir, NoFsync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	testEtcd = srv
	defer srv.Close()
	return w.m.Run()
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(withEtcd{m}) }
