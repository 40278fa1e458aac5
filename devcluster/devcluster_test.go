package devcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
)

func TestStartNeedsDir(t *testing.T) {
	if _, err := Start(context.Background(), Config{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("Start without Dir: err = %v, want ErrConfig", err)
	}
	if _, err := Start(context.Background(), Config{Dir: t.TempDir(), Servers: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("Start with -1 servers: err = %v, want ErrConfig", err)
	}
}

// waitServing retries a read until every tablet of the table answers.
func readRow(ctx context.Context, t *testing.T, tbl *client.Table, row string) client.Row {
	t.Helper()
	for {
		r, err := tbl.ReadRow(ctx, []byte(row))
		if err == nil {
			return r
		}
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", row, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestDataSurvivesRestartInTheSameDir(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := Config{Dir: dir, Servers: 2, LeaseTTL: 2 * time.Second, NoFsync: true}

	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.ServerAddrs()); got != 2 {
		t.Errorf("ServerAddrs: %d, want 2", got)
	}
	cli, err := client.NewClient(ctx, c.MasterAddr())
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Admin().CreateTable(ctx, "t", []families.Family{families.Default("cf")}, [][]byte{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	tbl := cli.Open("t")
	for _, row := range []string{"a", "z"} {
		m := client.NewMutation().Set("cf", []byte("q"), 1000, []byte("v-"+row))
		var err error
		for {
			if err = tbl.Apply(ctx, []byte(row), m); err == nil || ctx.Err() != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("writing %s: %v", row, err)
		}
	}
	cli.Close()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "tables", "t")); err != nil {
		t.Fatalf("no tablet data under Dir/data: %v", err)
	}

	c, err = Start(ctx, cfg)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer c.Close()
	cli, err = client.NewClient(ctx, c.MasterAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	tbl = cli.Open("t")
	for _, row := range []string{"a", "z"} {
		r := readRow(ctx, t, tbl, row)
		if len(r.Cells) != 1 || string(r.Cells[0].Value) != "v-"+row || r.Cells[0].Timestamp != 1000 {
			t.Errorf("after restart, row %s = %+v", row, r.Cells)
		}
	}
	servers, err := cli.Admin().Servers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range servers {
		ids = append(ids, s.ID)
	}
	if got := strings.Join(ids, ","); !strings.Contains(got, "ts-1") || !strings.Contains(got, "ts-2") {
		t.Errorf("servers after restart: %s, want ts-1 and ts-2", got)
	}
}
