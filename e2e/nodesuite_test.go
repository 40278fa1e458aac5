package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The Node.js Bigtable client (@google-cloud/bigtable, the version
// e2e/nodesuite/package-lock.json pins) running e2e/nodesuite/suite.js: the
// client's documented operations, one node:test test each. The client's
// own system tests are not in its npm package and no package registry
// has them (docs/GATEWAY.md, "Google's own client tests").
var (
	// nodeSuiteTests is how many tests suite.js has; every one of them
	// but nodeSuiteFailures must pass. A test added to or removed from
	// suite.js changes it, here and in docs/GATEWAY.md.
	nodeSuiteTests = 74
	// nodeSuiteFailures fail today, each for the reason given. One that
	// passes is reported too: take it out and update docs/GATEWAY.md, so
	// that it cannot silently fail again.
	nodeSuiteFailures = map[string]string{}
)

// nodeSuiteModules finds the client's installed packages (`make tools`
// runs npm ci into .tools/nodesuite): TABULA_NODESUITE (a node_modules
// directory), then .tools/nodesuite/node_modules; and node on the PATH.
// Without them the test is skipped, unless TABULA_REQUIRE_NODESUITE is set
// (make test).
func nodeSuiteModules(t *testing.T) (node, modules string) {
	t.Helper()
	modules = os.Getenv("TABULA_NODESUITE")
	if modules == "" {
		if root, err := repoRoot(); err == nil {
			modules = filepath.Join(root, ".tools", "nodesuite", "node_modules")
		}
	}
	node, err := exec.LookPath("node")
	switch {
	case err != nil:
		err = fmt.Errorf("no node on the PATH: %w", err)
	case !fileExists(filepath.Join(modules, "@google-cloud", "bigtable", "package.json")):
		err = fmt.Errorf("no @google-cloud/bigtable in %q", modules)
	}
	if err == nil {
		return node, modules
	}
	if os.Getenv("TABULA_REQUIRE_NODESUITE") != "" {
		t.Fatalf("%v: run `make tools` (it installs the client into .tools/nodesuite) or set TABULA_NODESUITE", err)
	}
	t.Skipf("%v: run `make tools` or set TABULA_NODESUITE", err)
	return "", ""
}

// TestNodeClientSuite runs e2e/nodesuite/suite.js with the Node.js client
// set up as its emulator instructions say (BIGTABLE_EMULATOR_HOST, no
// project id: every name is "projects/{{projectId}}/...") against `tabula
// dev`'s Bigtable gateway, and holds the outcome to the lists above.
func TestNodeClientSuite(t *testing.T) {
	slow(t)
	if secureAll() {
		t.Skip("the Bigtable gateway runs only without --auth: Bigtable clients in emulator mode send no credentials")
	}
	node, modules := nodeSuiteModules(t)
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	d := newDevProc(t)
	d.startDev(t)
	gw := d.gatewayAddr(t)

	// The suite takes about 10 s; the context is the backstop for a hung
	// call (the client retries some errors for minutes).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := filepath.Join(root, "e2e", "nodesuite")
	cmd := exec.CommandContext(ctx, node, "--test-reporter="+filepath.Join(dir, "reporter.mjs"), filepath.Join(dir, "suite.js"))
	cmd.Dir = t.TempDir()
	cmd.Env = nodeSuiteEnv(gw, modules)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("the suite ran for %v (%v)", time.Since(start).Round(time.Second), err)

	res := parseNodeSuiteOutput(out)
	t.Logf("%d of %d passed (expected: %d of %d)", res.count("PASS"), len(res),
		nodeSuiteTests-len(nodeSuiteFailures), nodeSuiteTests)
	for name, why := range nodeSuiteFailures {
		if res[name] == "FAIL" {
			t.Logf("%s fails as expected: %s", name, why)
		}
	}
	problems := nodeSuiteProblems(res)
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.Logf("---- output of the suite ----\n%s", out)
	}
}

// nodeSuiteEnv is this process's environment pointed at the gateway,
// without the variables that would give the client a project or
// credentials. METADATA_SERVER_DETECTION=none keeps the client's auth
// library from probing the GCE metadata server (a link-local address, not
// this machine) for a project it does not need in emulator mode.
func nodeSuiteEnv(gateway, modules string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "BIGTABLE_EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT",
			"GCP_PROJECT", "NODE_PATH", "NODE_OPTIONS", "METADATA_SERVER_DETECTION":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "BIGTABLE_EMULATOR_HOST="+gateway, "NODE_PATH="+modules, "METADATA_SERVER_DETECTION=none")
}

// nodeSuiteLine is the line e2e/nodesuite/reporter.mjs ends a top-level
// test with; a failure's message is indented under it and does not match.
var nodeSuiteLine = regexp.MustCompile(`^(PASS|FAIL|SKIP) (\S.*)$`)

// parseNodeSuiteOutput reads the outcome of each test from the suite's
// output. A test that never ended (the process crashed or hung) has none.
func parseNodeSuiteOutput(out []byte) goTestResults {
	res := goTestResults{}
	for line := range bytes.Lines(out) {
		if m := nodeSuiteLine.FindSubmatch(bytes.TrimRight(line, "\r\n")); m != nil {
			res[string(m[2])] = string(m[1])
		}
	}
	return res
}

// nodeSuiteProblems lists every way res differs from what the lists
// expect: a test that failed or skipped, an expected failure that passed
// or never ran, and fewer tests passing than nodeSuiteTests says.
func nodeSuiteProblems(res goTestResults) []string {
	var problems []string
	for name, o := range res {
		if _, expected := nodeSuiteFailures[name]; expected {
			if o == "PASS" {
				problems = append(problems, fmt.Sprintf("%s now passes: take it out of nodeSuiteFailures and update docs/GATEWAY.md", name))
			}
		} else if o != "PASS" {
			problems = append(problems, fmt.Sprintf("%s: %s, expected to pass", name, o))
		}
	}
	for name, why := range nodeSuiteFailures {
		if res[name] == "" {
			problems = append(problems, fmt.Sprintf("%s: never finished, expected to fail (%s)", name, why))
		}
	}
	if want := nodeSuiteTests - len(nodeSuiteFailures); res.count("PASS") != want {
		problems = append(problems, fmt.Sprintf("%d tests passed, expected %d (of %d): a test never finished, "+
			"or suite.js changed without nodeSuiteTests and docs/GATEWAY.md", res.count("PASS"), want, nodeSuiteTests))
	}
	slices.Sort(problems)
	return problems
}
