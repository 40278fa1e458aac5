package tabletserver

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/vfs"
)

// After a store outage every tablet of a server loads at once, each
// replaying logs from the store: one tablet's open must not hold up the
// others. Before, the registry of open engines stayed locked through the
// whole open, so loads on one server replayed one after another.
func TestOneTabletsOpenDoesNotHoldUpAnother(t *testing.T) {
	e := newEnv(t)
	disk := vfs.NewFaulty(nil)
	srv := e.start(func(o *Options) { o.FS = disk })
	c := e.dial(srv)
	slowDir := filepath.Join(e.root, "tables", e.schema.Name, "slow") + string(filepath.Separator)
	opening, release := make(chan struct{}, 1), make(chan struct{})
	disk.Set(func(op vfs.Op, name string) error {
		if strings.HasPrefix(name, slowDir) {
			select {
			case opening <- struct{}{}:
			default:
			}
			<-release
		}
		return nil
	})
	slow := e.assign("slow", nil, []byte("m"), srv, 1)
	errc := make(chan error, 1)
	go func() {
		_, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: slow.ToProto(), Schema: e.schema})
		errc <- err
	}()
	<-opening
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	fast := e.assign("fast", []byte("m"), nil, srv, 1)
	if _, err := c.LoadTablet(ctx, &tabulapb.LoadTabletRequest{Tablet: fast.ToProto(), Schema: e.schema}); err != nil {
		t.Errorf("loading a tablet while another one opens: %v", err)
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatalf("loading the slow tablet: %v", err)
	}
}
