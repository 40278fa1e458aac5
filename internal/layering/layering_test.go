package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/tabuladb/tabula"

// A rule forbids the packages matching from (a go list pattern) to depend,
// directly or not, on any package with one of the prefixes in banned. A
// package under a banned prefix itself may use its neighbours there.
type rule struct {
	from   string
	banned []string
	why    string
}

var rules = []rule{
	{module + "/master/...", []string{module + "/tabletserver"}, "the master never opens tablets: it may read the formats (wal, sharedlog, manifest), never the engine or the server"},
	{module + "/tabletserver/tablet", []string{"google.golang.org/grpc", "go.etcd.io/etcd", module + "/api"}, "the engine knows nothing of the network or of etcd"},
	{module + "/client/...", []string{module + "/master", module + "/tabletserver"}, "the client talks to the servers only through their APIs"},
	{module + "/...", []string{module + "/meta/memstore", module + "/meta/metatest"}, "etcd's in-memory twin and its conformance suite serve tests only: no package (and so no binary) depends on them"},
	{module + "/...", []string{module + "/internal/testkit"}, "testkit holds the helpers tests share: no package but a test imports it"},
}

// pkg is the part of go list's JSON that the rules read.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	DepOnly    bool
}

func TestLayering(t *testing.T) {
	for _, r := range rules {
		pkgs, err := goListDeps(r.from)
		if err != nil {
			t.Fatal(err)
		}
		if !hasRoot(pkgs) {
			t.Errorf("go list -deps %s names no package of its own: the rule checks nothing", r.from)
		}
		for _, v := range violations(r, pkgs) {
			t.Errorf("%s (%s)", v, r.why)
		}
	}
}

func hasRoot(pkgs map[string]*pkg) bool {
	for _, p := range pkgs {
		if !p.DepOnly {
			return true
		}
	}
	return false
}

// violations names, for every package matching r.from and every banned
// prefix it reaches, the banned package nearest to it, with the chain of
// imports that leads there (one line per prefix, not one per package of
// gRPC).
func violations(r rule, pkgs map[string]*pkg) []string {
	var out []string
	for _, p := range pkgs {
		if p.DepOnly {
			continue
		}
		for _, b := range r.banned {
			if isBanned(p.ImportPath, b) {
				continue
			}
			var nearest []string
			for _, d := range p.Deps {
				if !isBanned(d, b) {
					continue
				}
				if c := chain(pkgs, p.ImportPath, d); nearest == nil || len(c) < len(nearest) {
					nearest = c
				}
			}
			if nearest != nil {
				out = append(out, fmt.Sprintf("%s depends on %s: %s", p.ImportPath, nearest[len(nearest)-1], strings.Join(nearest, " -> ")))
			}
		}
	}
	sort.Strings(out)
	return out
}

// isBanned reports whether path is the package banned or one below it.
func isBanned(path, banned string) bool {
	return path == banned || strings.HasPrefix(path, banned+"/")
}

// chain is a shortest import path from one package to another (breadth
// first over the imports go list reported).
func chain(pkgs map[string]*pkg, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var path []string
			for p := cur; p != ""; p = prev[p] {
				path = append([]string{p}, path...)
			}
			return path
		}
		if p := pkgs[cur]; p != nil {
			for _, next := range p.Imports {
				if _, seen := prev[next]; !seen {
					prev[next] = cur
					queue = append(queue, next)
				}
			}
		}
	}
	return []string{from, "…", to}
}

// goListDeps runs `go list -deps -json pattern` with the go binary of the
// toolchain the test was built with.
func goListDeps(pattern string) (map[string]*pkg, error) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goBin, "list", "-deps", "-json", pattern)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("layering: go list -deps -json %s: %w: %s", pattern, err, stderr.String())
	}
	pkgs := make(map[string]*pkg)
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("layering: decode go list output: %w", err)
		}
		pkgs[p.ImportPath] = &p
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("layering: go list -deps -json %s listed nothing", pattern)
	}
	return pkgs, nil
}
