package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The docs name flags, tests and packages; these tests fail when a name
// they use no longer exists in the code, so the docs cannot drift from it
// unnoticed. They read docs/*.md and README.md of this repository, run
// `go list ./...` of the root module, and need no network.

// otherToolsFlags are flags the docs show for programs other than tabula,
// each with the program whose flag it is. A `--name` in the docs must be a
// flag of some tabula command, or one of these on a line that names its
// program (so `tabula master --name` would still be caught).
var otherToolsFlags = map[string]string{
	"rm":                        "docker compose", // docker compose run --rm
	"build":                     "docker compose", // docker compose up --build
	"name":                      "etcd",           // a member's name
	"initial-cluster":           "etcd",           // the members of a new cluster
	"quota-backend-bytes":       "etcd",           // the backend's size limit
	"auto-compaction-retention": "etcd",           // how long old revisions stay
	"max-request-bytes":         "etcd",           // the largest request
	"max-txn-ops":               "etcd",           // the most operations in one transaction
}

// repoRoot is the root module's folder: two up from cmd/tabula.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found: %v", err)
	}
	return root
}

// docLine is one line of a markdown file, for messages.
type docLine struct {
	file string // relative to the repository root
	n    int    // 1-based
	text string
}

func (l docLine) String() string { return l.file + ":" + strconv.Itoa(l.n) }

// docLines reads README.md and docs/*.md.
func docLines(t *testing.T, root string) []docLine {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []docLine
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		out = append(out, readLines(t, f, rel)...)
	}
	return out
}

func readLines(t *testing.T, file, rel string) []docLine {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		out = append(out, docLine{file: rel, n: n, text: sc.Text()})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	urlRE = regexp.MustCompile(`[a-z][a-z0-9+.-]*://[^\s)<>\x60]*`)
	// flagRE is a `--name` token: two dashes after a non-word character,
	// then a lower-case name. A name ending in "-" followed by "*"
	// (`--tls-*`) stands for every flag starting with it.
	flagRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])--([a-z][a-z0-9-]*)(\*?)`)
)

// tabulaFlags is every flag of every tabula command, persistent or local,
// with the help flag cobra adds when a command runs.
func tabulaFlags() map[string]bool {
	names := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		c.InitDefaultVersionFlag()
		add := func(f *pflag.Flag) { names[f.Name] = true }
		c.LocalFlags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	return names
}

// TestDocsNameOnlyExistingFlags: every `--name` in README.md and
// docs/*.md, in code or prose, outside URLs, is a flag of some tabula
// command (any command: the docs often name a flag without its command),
// or a flag of another program in otherToolsFlags on a line naming that
// program. `--prefix-*` needs some flag starting with prefix-.
func TestDocsNameOnlyExistingFlags(t *testing.T) {
	flags := tabulaFlags()
	var missing []string
	for _, l := range docLines(t, repoRoot(t)) {
		text := urlRE.ReplaceAllString(l.text, " ")
		for _, m := range flagRE.FindAllStringSubmatch(text, -1) {
			name, star := m[1], m[2] == "*"
			if star || strings.HasSuffix(name, "-") {
				if !anyWithPrefix(flags, name) {
					missing = append(missing, l.String()+": no tabula flag starts with --"+name)
				}
				continue
			}
			if flags[name] {
				continue
			}
			if prog, ok := otherToolsFlags[name]; ok && strings.Contains(text, prog) {
				continue
			}
			missing = append(missing, l.String()+": --"+name+" is not a flag of any tabula command (nor of another program named on the line, otherToolsFlags)")
		}
	}
	for _, m := range missing {
		t.Error(m)
	}
}

func anyWithPrefix(set map[string]bool, prefix string) bool {
	for n := range set {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

var (
	codeSpanRE = regexp.MustCompile("`[^`]+`")
	// testNameRE is a test's name inside a code span; a trailing "*"
	// makes it a prefix (`TestFoo*`: some test starts with TestFoo).
	testNameRE = regexp.MustCompile(`\bTest[A-Z0-9_][A-Za-z0-9_]*\*?`)
	testFuncRE = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	// suiteTestRE is a test of the Go Bigtable client's suite, quoted.
	suiteTestRE = regexp.MustCompile(`"(TestIntegration_[A-Za-z0-9_]+)"`)
)

// testFuncs is the name of every Test function in a _test.go file under
// root (both modules: the root and bench/).
func testFuncs(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".tools", "bin", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range testFuncRE.FindAllSubmatch(b, -1) {
			names[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestDocsNameOnlyExistingTests: every test named in a code span of
// README.md or docs/*.md exists; `TestFoo*` needs a test whose name
// starts with TestFoo.
func TestDocsNameOnlyExistingTests(t *testing.T) {
	root := repoRoot(t)
	tests := testFuncs(t, root)
	if len(tests) == 0 {
		t.Fatal("found no tests under " + root)
	}
	// The Go Bigtable client's own tests, which the docs name too, exist
	// where e2e lists them (goSuitePasses, goSuiteFailures).
	suite, err := os.ReadFile(filepath.Join(root, "e2e", "gosuite_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range suiteTestRE.FindAllSubmatch(suite, -1) {
		tests[string(m[1])] = true
	}
	for _, l := range docLines(t, root) {
		for _, span := range codeSpanRE.FindAllString(l.text, -1) {
			for _, name := range testNameRE.FindAllString(span, -1) {
				if prefix, ok := strings.CutSuffix(name, "*"); ok {
					if !anyWithPrefix(tests, prefix) {
						t.Errorf("%s: no test starts with %s", l, prefix)
					}
				} else if !tests[name] {
					t.Errorf("%s: test %s does not exist", l, name)
				}
			}
		}
	}
}
