package e2e

import (
	"maps"
	"strings"
	"testing"
)

// A transcript of e2e/nodesuite/reporter.mjs: a failure's message is
// indented (and may itself start with a word like PASS); other output of
// the client (warnings) is not a test.
const nodeSuiteSample = `(node:1) MetadataLookupWarning: something
PASS admin: table.exists
FAIL data: row.get
    PASS this is the error message
    at TestContext
SKIP filter: label
PASS filter: value strip
nodesuite: 2 passed, 1 failed
`

func TestParseNodeSuiteOutput(t *testing.T) {
	got := parseNodeSuiteOutput([]byte(nodeSuiteSample))
	want := goTestResults{"admin: table.exists": "PASS", "data: row.get": "FAIL", "filter: label": "SKIP", "filter: value strip": "PASS"}
	if !maps.Equal(got, want) {
		t.Errorf("parseNodeSuiteOutput = %v, want %v", got, want)
	}
}

// allNodeSuitePassing is an outcome the lists accept: nodeSuiteTests tests,
// the expected failures failing.
func allNodeSuitePassing() goTestResults {
	res := goTestResults{}
	for n := range nodeSuiteFailures {
		res[n] = "FAIL"
	}
	for i := 0; len(res) < nodeSuiteTests; i++ {
		res[strings.Repeat("t", i+1)] = "PASS"
	}
	return res
}

func TestNodeSuiteProblems(t *testing.T) {
	if p := nodeSuiteProblems(allNodeSuitePassing()); len(p) != 0 {
		t.Fatalf("the expected outcome has problems: %q", p)
	}
	for _, c := range []struct {
		name   string
		change func(goTestResults)
		want   []string
	}{
		{"a test fails", func(r goTestResults) { r["t"] = "FAIL" }, []string{"73 tests passed", "t: FAIL, expected to pass"}},
		{"a test skips", func(r goTestResults) { r["t"] = "SKIP" }, []string{"73 tests passed", "t: SKIP, expected to pass"}},
		{"a test never ends", func(r goTestResults) { delete(r, "t") }, []string{"73 tests passed"}},
		{"a test is added", func(r goTestResults) { r["new"] = "PASS" }, []string{"75 tests passed"}},
		{"nothing ran", func(r goTestResults) { clear(r) }, []string{"0 tests passed"}},
	} {
		res := allNodeSuitePassing()
		c.change(res)
		p := nodeSuiteProblems(res)
		ok := len(p) == len(c.want)
		for i := 0; ok && i < len(p); i++ {
			ok = strings.HasPrefix(p[i], c.want[i])
		}
		if !ok {
			t.Errorf("%s: problems %q, want ones starting %q", c.name, p, c.want)
		}
	}
}

// FuzzParseNodeSuiteOutput: any transcript parses, and every outcome found
// is one of the three a test can end with, for a non-empty name.
func FuzzParseNodeSuiteOutput(f *testing.F) {
	f.Add([]byte(nodeSuiteSample))
	f.Add([]byte("PASS \nFAIL  x\r\nSKIP"))
	f.Fuzz(func(t *testing.T, out []byte) {
		for name, o := range parseNodeSuiteOutput(out) {
			if name == "" || (o != "PASS" && o != "FAIL" && o != "SKIP") {
				t.Fatalf("outcome %q for %q", o, name)
			}
		}
	})
}
