package e2e

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// A -test.v transcript: subtests (indented) and a test's own output must
// not count; a test that panicked never ends.
const goTestSample = `=== RUN   TestIntegration_A
--- PASS: TestIntegration_A (0.10s)
=== RUN   TestIntegration_B
    integration_test.go:12: --- FAIL: TestIntegration_X (0.00s)
=== RUN   TestIntegration_B/sub
    --- FAIL: TestIntegration_B/sub (0.00s)
--- FAIL: TestIntegration_B (1.20s)
=== RUN   TestIntegration_C
    integration_test.go:99: needs prod
--- SKIP: TestIntegration_C (0.00s)
=== RUN   TestIntegration_D
panic: boom
FAIL
`

func TestParseGoTestOutput(t *testing.T) {
	got := parseGoTestOutput([]byte(goTestSample))
	want := goTestResults{"TestIntegration_A": "PASS", "TestIntegration_B": "FAIL", "TestIntegration_C": "SKIP"}
	if !maps.Equal(got, want) {
		t.Errorf("parseGoTestOutput = %v, want %v", got, want)
	}
}

// expectedGoSuite is the outcome the lists describe.
func expectedGoSuite() goTestResults {
	res := goTestResults{"TestIntegration_Pinger": "SKIP"}
	for _, n := range goSuitePasses {
		res[n] = "PASS"
	}
	for n := range goSuiteFailures {
		res[n] = "FAIL"
	}
	return res
}

func TestGoSuiteProblems(t *testing.T) {
	if p := goSuiteProblems(expectedGoSuite()); len(p) != 0 {
		t.Fatalf("the expected outcome has problems: %q", p)
	}
	aPass := goSuitePasses[0]
	aFailure := slices.Sorted(maps.Keys(goSuiteFailures))[0]
	for _, c := range []struct {
		name   string
		change func(goTestResults)
		want   string
	}{
		{"a passing test fails", func(r goTestResults) { r[aPass] = "FAIL" }, aPass + ": FAIL, expected to pass"},
		{"a passing test skips", func(r goTestResults) { r[aPass] = "SKIP" }, aPass + ": SKIP, expected to pass"},
		{"a passing test never ends", func(r goTestResults) { delete(r, aPass) }, aPass + ": never finished"},
		{"an expected failure passes", func(r goTestResults) { r[aFailure] = "PASS" }, aFailure + " now passes"},
		{"an expected failure never ends", func(r goTestResults) { delete(r, aFailure) }, aFailure + ": never finished"},
		{"an unlisted test fails", func(r goTestResults) { r["TestIntegration_New"] = "FAIL" }, "TestIntegration_New: FAIL, in neither list"},
	} {
		res := expectedGoSuite()
		c.change(res)
		p := goSuiteProblems(res)
		if len(p) != 1 || !strings.HasPrefix(p[0], c.want) {
			t.Errorf("%s: problems %q, want one starting %q", c.name, p, c.want)
		}
	}
}

// FuzzParseGoTestOutput: any transcript parses, and every outcome found is
// one of the three a test can end with.
func FuzzParseGoTestOutput(f *testing.F) {
	f.Add([]byte(goTestSample))
	f.Add([]byte("--- PASS: Test (\n--- FAIL: Test (0s)"))
	f.Fuzz(func(t *testing.T, out []byte) {
		for name, o := range parseGoTestOutput(out) {
			if o != "PASS" && o != "FAIL" && o != "SKIP" {
				t.Fatalf("%s: outcome %q", name, o)
			}
			if !strings.HasPrefix(name, "Test") || strings.ContainsAny(name, " \t\n") {
				t.Fatalf("name %q", name)
			}
		}
	})
}

// TestGoSuiteOutOfTime: only a test with its own 2 s budget, expected to
// pass, that failed naming a deadline is run again.
func TestGoSuiteOutOfTime(t *testing.T) {
	failed := func(name, why string) []byte {
		return []byte("=== RUN   " + name + "\n    integration_test.go:1: " + why + "\n--- FAIL: " + name + " (2.01s)\n")
	}
	deadline := "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
	for _, c := range []struct {
		name string
		out  []byte
		want bool
	}{
		{"TestIntegration_Admin", failed("TestIntegration_Admin", deadline), true},
		{"TestIntegration_Admin", failed("TestIntegration_Admin", "rpc error: code = NotFound desc = no table"), false},
		{"TestIntegration_Admin", []byte("--- PASS: TestIntegration_Admin (0.5s)\n"), false},
		{"TestIntegration_Presidents", failed("TestIntegration_Presidents", deadline), false},
		{"TestIntegration_TableDeletionProtection", failed("TestIntegration_TableDeletionProtection", deadline), true},
		// Expected to fail, and without a budget of its own.
		{"TestIntegration_LargeReadsWritesAndScans", failed("TestIntegration_LargeReadsWritesAndScans", deadline), false},
	} {
		if got := goSuiteOutOfTime(c.name, c.out); got != c.want {
			t.Errorf("goSuiteOutOfTime(%s, %q) = %v, want %v", c.name, c.out, got, c.want)
		}
	}
}
