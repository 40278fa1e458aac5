package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cbtBinary finds cbt (cloud.google.com/go/bigtable/cmd/cbt, built by `make
// tools` into .tools/bin): TABULA_CBT, .tools/bin/cbt, the PATH. Without
// it the test is skipped, unless TABULA_REQUIRE_CBT is set (make test).
func cbtBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TABULA_CBT"); p != "" {
		return p
	}
	if root, err := repoRoot(); err == nil {
		if p := filepath.Join(root, ".tools", "bin", "cbt"); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("cbt"); err == nil {
		return p
	}
	if os.Getenv("TABULA_REQUIRE_CBT") != "" {
		t.Fatal("no cbt binary: run `make tools` (it builds .tools/bin/cbt) or set TABULA_CBT")
	}
	t.Skip("no cbt binary: run `make tools` or set TABULA_CBT")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestCbtAgainstTheDevCluster runs Google's cbt tool, unchanged, against
// `tabula dev`'s Bigtable gateway: its everyday commands, with their
// output checked.
func TestCbtAgainstTheDevCluster(t *testing.T) {
	slow(t)
	if secureAll() {
		t.Skip("the Bigtable gateway runs only without --auth: Bigtable clients in emulator mode send no credentials")
	}
	cbt := cbtBinary(t)
	d := newDevProc(t)
	d.startDev(t)
	gw := d.gatewayAddr(t)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(cbt, append([]string{"-project", "p", "-instance", "i"}, args...)...)
		cmd.Env = append(os.Environ(), "BIGTABLE_EMULATOR_HOST="+gw)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("cbt %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
			}
		case <-time.After(opTimeout):
			cmd.Process.Kill()
			<-done
			t.Fatalf("cbt %s: no answer within %v", strings.Join(args, " "), opTimeout)
		}
		return out.String()
	}
	want := func(what, got string, in ...string) {
		t.Helper()
		for _, s := range in {
			if !strings.Contains(got, s) {
				t.Errorf("%s: output lacks %q:\n%s", what, s, got)
			}
		}
	}
	wantNot := func(what, got string, notIn ...string) {
		t.Helper()
		for _, s := range notIn {
			if strings.Contains(got, s) {
				t.Errorf("%s: output has %q:\n%s", what, s, got)
			}
		}
	}

	run("createtable", "users", "families=info:maxversions=2", "splits=m")
	run("createfamily", "users", "extra")
	run("setgcpolicy", "users", "extra", "maxage=1h", "or", "maxversions=3")
	want("ls", run("ls"), "users")
	want("ls users", run("ls", "users"), "info", "versions() > 2", "extra", "(age() > 1h || versions() > 3)")

	run("set", "users", "alice", "info:name=Alice", "info:city=Paris", "extra:x=1")
	run("set", "users", "bob", "info:name=Bob")
	run("set", "users", "zed", "info:name=Zed")
	run("set", "users", "alice", "info:name=Alicia")
	want("lookup", run("lookup", "users", "alice"), "info:name", `"Alicia"`, `"Alice"`, "info:city", `"Paris"`, "extra:x")
	want("lookup cells-per-column", run("lookup", "users", "alice", "cells-per-column=1"), `"Alicia"`)
	wantNot("lookup cells-per-column", run("lookup", "users", "alice", "cells-per-column=1"), `"Alice"`)

	all := run("read", "users")
	want("read", all, "alice", "bob", "zed")
	if strings.Index(all, "alice") > strings.Index(all, "bob") || strings.Index(all, "bob") > strings.Index(all, "zed") {
		t.Errorf("read: rows out of order:\n%s", all)
	}
	got := run("read", "users", "prefix=b")
	want("read prefix", got, "bob")
	wantNot("read prefix", got, "alice", "zed")
	got = run("read", "users", "start=b", "end=zed")
	want("read start/end", got, "bob")
	wantNot("read start/end", got, "alice", "zed")
	got = run("read", "users", "regex=.*e.*")
	want("read regex", got, "alice", "zed")
	wantNot("read regex", got, "bob")
	got = run("read", "users", "columns=info:city")
	want("read columns", got, "alice", `"Paris"`)
	wantNot("read columns", got, "bob", `"Alicia"`)
	got = run("read", "users", "count=1")
	want("read count", got, "alice")
	wantNot("read count", got, "bob")
	if got := strings.TrimSpace(run("count", "users")); got != "3" {
		t.Errorf("count = %q, want 3", got)
	}

	run("deleterow", "users", "bob")
	if got := strings.TrimSpace(run("count", "users")); got != "2" {
		t.Errorf("count after deleterow = %q, want 2", got)
	}
	run("deletefamily", "users", "extra")
	got = run("ls", "users")
	wantNot("ls after deletefamily", got, "extra")
	wantNot("lookup after deletefamily", run("lookup", "users", "alice"), "extra:x")
	run("deletetable", "users")
	wantNot("ls after deletetable", run("ls"), "users")
}
