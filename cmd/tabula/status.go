package main

import (
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/tabuladb/tabula/devcluster"
	"github.com/tabuladb/tabula/master"
	"github.com/tabuladb/tabula/opshttp"
	"github.com/tabuladb/tabula/statuspage"
	"github.com/tabuladb/tabula/tabletserver"
)

// The status pages (docs/OPERATIONS.md "Status page") live on the
// operator's HTTP port (--http) next to /healthz and /readyz: the
// master's at /, a tablet server's own at / on its port, and in `tabula
// dev` the master's at / and each server's at /servers/<id>/.

func addLoadIntervalFlag(c *cobra.Command) {
	c.Flags().Duration("load-interval", 10*time.Second, "how often the leading master pulls every tablet server's load report (status page, tabula top, balancing)")
}

// masterStatusRoutes are the master's status page, linking each tablet
// server's own page through --server-status-url.
func masterStatusRoutes(v *viper.Viper, m *master.Master) []opshttp.Route {
	tmpl := v.GetString("server-status-url")
	var link func(id, addr string) string
	if tmpl != "" {
		link = func(id, addr string) string {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			return strings.NewReplacer("{id}", id, "{host}", host).Replace(tmpl)
		}
	}
	return statuspage.New(m, statuspage.Options{ServerURL: link}).Routes()
}

func addServerStatusURLFlag(c *cobra.Command) {
	c.Flags().String("server-status-url", "", `link to each tablet server's own status page on the master's, with {host} and {id} replaced, e.g. "http://{host}:7280/" ("": no links)`)
}

// devStatusRoutes are the dev cluster's pages: the master's at /, each
// tablet server's at /servers/<id>/.
func devStatusRoutes(cl *devcluster.Cluster) []opshttp.Route {
	routes := statuspage.New(cl.Master(), statuspage.Options{
		ServerURL: func(id, _ string) string { return "/servers/" + id + "/" },
	}).Routes()
	for _, s := range cl.Servers() {
		routes = append(routes, statuspage.NewServerPage(s, "/").Routes("/servers/"+s.ID()+"/")...)
	}
	return routes
}

func serverStatusRoutes(s *tabletserver.Server) []opshttp.Route {
	return statuspage.NewServerPage(s, "").Routes("/")
}

// printStatusURL says where the status page is.
func printStatusURL(out io.Writer, ops *opshttp.Server) {
	if ops != nil {
		fmt.Fprintf(out, "status page on http://%s/\n", ops.Addr())
	}
}
