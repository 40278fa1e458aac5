package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// buildVersion is what the binary knows of its build, from the
// information the go command embeds (runtime/debug.ReadBuildInfo).
type buildVersion struct {
	Module   string `json:"module"`
	Version  string `json:"version"`               // "(devel)" for go run and builds without VCS stamping
	Commit   string `json:"commit,omitempty"`      // vcs.revision; "" when not built from a git checkout
	Time     string `json:"commit_time,omitempty"` // vcs.time
	Modified bool   `json:"modified"`              // vcs.modified: uncommitted changes were built
	Go       string `json:"go"`
}

// readBuildVersion reads the embedded build information. `go build` in a
// git checkout (what `make build` runs) stamps the commit; `go run`, `go
// test` and a build outside git (or with -buildvcs=false) do not, and the
// commit is then unknown.
func readBuildVersion() buildVersion {
	v := buildVersion{Module: "github.com/tabuladb/tabula", Version: "(devel)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Go = bi.GoVersion
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one line `tabula --version` prints.
func (v buildVersion) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tabula %s", v.Version)
	if v.Commit != "" {
		fmt.Fprintf(&b, " commit %s", v.Commit)
		if v.Modified {
			b.WriteString(" (modified)")
		}
	} else {
		b.WriteString(" commit unknown (not built by go build from a git checkout)")
	}
	fmt.Fprintf(&b, " %s", v.Go)
	return b.String()
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version, the git commit the binary was built from, and the Go version",
		Long: `Print what the binary knows of its build: the module version, the git commit
(and whether uncommitted changes were built in), the commit's time and the Go
version. ` + "`go build`" + ` (and ` + "`make build`" + `) in a git checkout stamp the commit; a binary
from ` + "`go run`" + `, or built outside git, says "commit unknown" and version
"(devel)" unless built from a module version. ` + "`tabula --version`" + ` prints the
same on one line. It needs no cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := readBuildVersion()
			format, _ := cmd.Flags().GetString("output")
			out, err := newPrinter(cmd.OutOrStdout(), format)
			if err != nil {
				return err
			}
			if out.json {
				return out.object(v)
			}
			commit := v.Commit
			switch {
			case commit == "":
				commit = "unknown (not built by go build from a git checkout)"
			case v.Modified:
				commit += " (modified: uncommitted changes built in)"
			}
			w := out.w
			fmt.Fprintf(w, "tabula %s\nmodule: %s\ncommit: %s\n", v.Version, v.Module, commit)
			if v.Time != "" {
				fmt.Fprintf(w, "commit time: %s\n", v.Time)
			}
			_, err = fmt.Fprintf(w, "go: %s\n", v.Go)
			return err
		},
	}
}
