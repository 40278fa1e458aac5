package main

import (
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/auth"
)

// The package table of docs/ARCHITECTURE.md and the lists of master-only
// calls in the docs, checked against the code (see docs_test.go).

// goListPackages is the root module's packages, relative to the module
// ("" for the root itself).
func goListPackages(t *testing.T, root string) []string {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if p, err := exec.LookPath("go"); err == nil {
		gobin = p
	}
	cmd := exec.Command(gobin, "list", "-f", "{{.ImportPath}} {{.Module.Path}}", "./...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOPROXY=off") // no network
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderrOf(err))
	}
	var pkgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		imp, mod, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("go list: unexpected line %q", line)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(imp, mod), "/")
		pkgs = append(pkgs, rel)
	}
	sort.Strings(pkgs)
	return pkgs
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// packageTable reads the package table of docs/ARCHITECTURE.md (the
// table under "## Packages"): every path in a code span of a row, with
// the paths of its first column apart. `.../name` in a row stands for
// name beside the row's previous path (`a/b/c`, `.../d` is a/b/d).
func packageTable(t *testing.T, root string) (named map[string]bool, rows map[string]docLine) {
	t.Helper()
	named, rows = map[string]bool{}, map[string]docLine{}
	in := false
	for _, l := range readLines(t, filepath.Join(root, "docs", "ARCHITECTURE.md"), "docs/ARCHITECTURE.md") {
		if strings.HasPrefix(l.text, "#") {
			in = strings.TrimSpace(l.text) == "## Packages"
			continue
		}
		if !in || !strings.HasPrefix(l.text, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(l.text, "| "), "|")
		prev := ""
		for i, c := range cells {
			for _, span := range codeSpanRE.FindAllString(c, -1) {
				p := strings.Trim(span, "`")
				if rest, ok := strings.CutPrefix(p, ".../"); ok && prev != "" {
					p = path.Join(path.Dir(prev), rest)
				}
				prev = p
				named[p] = true
				if i == 0 {
					rows[p] = l
				}
			}
		}
	}
	if len(rows) == 0 {
		t.Fatal(`docs/ARCHITECTURE.md: no package table under "## Packages"`)
	}
	return named, rows
}

// TestArchitectureTableListsEveryPackage: every package of the root
// module (`go list ./...`) is named in a row of the package table in
// docs/ARCHITECTURE.md, and every path in the table's first column is a
// package.
func TestArchitectureTableListsEveryPackage(t *testing.T) {
	root := repoRoot(t)
	pkgs := goListPackages(t, root)
	named, rows := packageTable(t, root)
	exists := map[string]bool{}
	for _, p := range pkgs {
		exists[p] = true
		if p != "" && !named[p] {
			t.Errorf("docs/ARCHITECTURE.md: package %s has no row in the package table (## Packages)", p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(rows)) {
		if !exists[p] {
			t.Errorf("%s: %s in the package table's first column is not a package of the module", rows[p], p)
		}
	}
}

// masterOnlyLists are the sentences that list the tablet server's
// master-only calls, by file: the text in parentheses after each must be
// exactly the calls auth.TabletServerRules marks MasterOnly.
var masterOnlyLists = map[string]string{
	"docs/CONTRACTS.md":  "the tablet server's master-only calls (",
	"docs/OPERATIONS.md": "cannot make the calls only the master makes (",
}

// TestDocsListEveryMasterOnlyCall: the threat model (OPERATIONS.md) and
// the guard's description (CONTRACTS.md §5) name every call only the
// master may make, and no other.
func TestDocsListEveryMasterOnlyCall(t *testing.T) {
	var want []string
	for method, rule := range auth.TabletServerRules() {
		if rule.MasterOnly {
			want = append(want, path.Base(method))
		}
	}
	sort.Strings(want)
	root := repoRoot(t)
	for file, lead := range masterOnlyLists {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(b)), " ")
		_, rest, ok := strings.Cut(text, lead)
		if !ok {
			t.Errorf("%s: the list of master-only calls (after %q) is gone; update masterOnlyLists", file, lead)
			continue
		}
		list, _, _ := strings.Cut(rest, ")")
		var got []string
		for _, name := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ';' }) {
			name = strings.TrimSpace(name)
			if !strings.Contains(name, "`") { // a code span cites the rules
				got = append(got, name)
			}
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: master-only calls listed: %v; auth.TabletServerRules: %v", file, got, want)
		}
	}
}
