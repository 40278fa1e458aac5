// Command tabula is Tabula's one binary: the dev cluster (`tabula dev`),
// the server processes (`tabula master`, `tabula tabletserver`), the admin
// commands (`tabula table ...`, `tabula family ...`, `tabula servers`), the
// data commands (put, get, scan, delete, count, incr, append, checkandput,
// export, import), `tabula version` and `tabula bench`.
//
// Settings come, in order of precedence, from flags, TABULA_* environment
// variables (the flag name upper-cased with - turned into _, e.g.
// TABULA_MASTER, TABULA_LEASE_TTL), the YAML file given by --config (keys
// are the flag names; see configs/), and the built-in defaults.
//
// Errors go to stderr with a hint of what to do; the exit status is 1 for
// a failed operation and 2 for a command line that could not be parsed.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes one command line and returns the exit status.
func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return 0
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(os.Stderr, "tabula: %v\nhint: run `tabula %s --help` for usage\n", ue.err, ue.cmd)
		return 2
	}
	msg, hint := explain(err)
	fmt.Fprintf(os.Stderr, "tabula: %s\n", msg)
	if hint != "" {
		fmt.Fprintf(os.Stderr, "hint: %s\n", hint)
	}
	return 1
}
