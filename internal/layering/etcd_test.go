package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// etcdClient are the import paths (and everything below them) that only
// meta may import: all of etcd (its client, the concurrency package, the
// key-value types, its error codes). Everything else reaches etcd through meta's typed
// records and named transactions (docs/ARCHITECTURE.md).
var etcdClient = []string{"go.etcd.io/etcd"}

// etcdAllowed are the packages (and those below them) that may import
// etcdClient: meta itself, the bootstrap that starts an embedded etcd, and
// the tests' embedded etcd (internal/testkit/etcdtest), which hands a test
// (meta's own among them) a client of its etcd.
var etcdAllowed = []string{module + "/meta", module + "/internal/embedetcd", module + "/internal/testkit/etcdtest"}

// etcdPending are files still being moved onto meta, named by their path
// in the module. Each must still import etcd's client (the test fails
// when one no longer needs its exception, so it is removed).
var etcdPending = map[string]string{}

// listedPkg is the part of go list's JSON that the etcd rule reads.
type listedPkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
}

func TestOnlyMetaImportsTheEtcdClient(t *testing.T) {
	pkgs, err := goList(module + "/...")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list names no package: the rule checks nothing")
	}
	root := moduleRoot(pkgs)
	used := map[string]bool{}
	var bad []string
	for _, p := range pkgs {
		if underAny(p.ImportPath, etcdAllowed) {
			continue
		}
		for _, f := range append(append([]string(nil), p.GoFiles...), p.CgoFiles...) {
			path := filepath.Join(p.Dir, f)
			imports, err := fileImports(path)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			for _, imp := range imports {
				if !underAny(imp, etcdClient) {
					continue
				}
				if _, ok := etcdPending[rel]; ok {
					used[rel] = true
					continue
				}
				bad = append(bad, fmt.Sprintf("%s imports %s: only meta (and the embedded etcd's bootstrap) may; use meta's records and transactions", rel, imp))
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
	for f, branch := range etcdPending {
		if !used[f] {
			t.Errorf("%s no longer imports etcd's client: remove its exception (branch %s) from etcdPending", f, branch)
		}
	}
}

// underAny reports whether path is one of prefixes or below one.
func underAny(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if isBanned(path, p) {
			return true
		}
	}
	return false
}

// moduleRoot is the folder of the module's root package (or of the
// shortest import path listed).
func moduleRoot(pkgs []listedPkg) string {
	for _, p := range pkgs {
		if p.ImportPath == module {
			return p.Dir
		}
	}
	best := pkgs[0]
	for _, p := range pkgs[1:] {
		if len(p.ImportPath) < len(best.ImportPath) {
			best = p
		}
	}
	rel := strings.TrimPrefix(best.ImportPath, module+"/")
	return strings.TrimSuffix(filepath.ToSlash(best.Dir), "/"+rel)
}

// fileImports returns the import paths of one Go file.
func fileImports(path string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		return nil, fmt.Errorf("layering: %w", err)
	}
	var out []string
	for _, s := range f.Imports {
		p, err := strconv.Unquote(s.Path.Value)
		if err != nil {
			return nil, fmt.Errorf("layering: %s: import %s: %w", path, s.Path.Value, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// goList runs `go list -json pattern` (the packages themselves, not their
// dependencies) with the go binary of the toolchain the test was built
// with.
func goList(pattern string) ([]listedPkg, error) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goBin, "list", "-json", pattern)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("layering: go list -json %s: %w: %s", pattern, err, stderr.String())
	}
	var pkgs []listedPkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("layering: decode go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}
