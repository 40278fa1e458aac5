package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/tabuladb/tabula/opshttp"
)

// --pprof serves Go's profiles on the operator's port, and only with it:
// they show the process's internals to whoever reaches the port.
func TestPprofOnlyWithTheFlag(t *testing.T) {
	for _, on := range []bool{false, true} {
		c := &cobra.Command{Use: "x"}
		addHTTPFlag(c, "")
		v := viper.New()
		if err := v.BindPFlags(c.Flags()); err != nil {
			t.Fatal(err)
		}
		v.Set("http", "127.0.0.1:0")
		v.Set("metrics", false)
		v.Set("pprof", on)
		_, routes := opsMetrics(v)
		srv := httptest.NewServer(opshttp.Handler(opshttp.NewHealth(func(context.Context) error { return nil }), routes...))
		resp, err := http.Get(srv.URL + "/debug/pprof/goroutine?debug=1")
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[on]; resp.StatusCode != want {
			t.Fatalf("--pprof=%v: /debug/pprof/goroutine answered %d, want %d", on, resp.StatusCode, want)
		}
	}
}
