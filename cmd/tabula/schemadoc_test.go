package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestSchemaDesignExamples runs every `$ tabula ...` line of
// docs/SCHEMA-DESIGN.md's console blocks against the dev cluster, in
// order, and compares what each prints with the lines under it in the
// document: the guide's examples are what a reader gets. Runs of blanks
// compare as one space (the text output is tab-separated) and cell
// timestamps, which the server assigns, as "@" and 16 digits.
func TestSchemaDesignExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/SCHEMA-DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	steps := consoleSteps(t, string(doc))
	if len(steps) < 10 {
		t.Fatalf("docs/SCHEMA-DESIGN.md: %d console commands, want the guide's examples", len(steps))
	}
	for _, st := range steps {
		if len(st.args) > 3 && st.args[0] == "table" && st.args[1] == "create" {
			table := st.args[2]
			t.Cleanup(func() { tabula(t, "table", "delete", table) })
		}
		r := tabula(t, st.args...)
		if r.code != 0 {
			t.Fatalf("line %d: tabula %s: exit %d\n%s", st.line, strings.Join(st.args, " "), r.code, r.stderr)
		}
		if got, want := normalizeTranscript(r.stdout), normalizeTranscript(st.want); got != want {
			t.Errorf("line %d: tabula %s printed\n%s\nthe document says\n%s", st.line, strings.Join(st.args, " "), got, want)
		}
	}
}

// consoleStep is one `$ tabula` line of a console block and the output
// the document shows under it.
type consoleStep struct {
	line int
	args []string
	want string
}

func consoleSteps(t *testing.T, doc string) []consoleStep {
	t.Helper()
	var steps []consoleStep
	in := false
	for i, l := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(l, "```console"):
			in = true
		case strings.HasPrefix(l, "```"):
			in = false
		case in && strings.HasPrefix(l, "$ "):
			args := shellWords(t, i+1, strings.TrimPrefix(l, "$ "))
			if len(args) == 0 || args[0] != "tabula" {
				t.Fatalf("docs/SCHEMA-DESIGN.md:%d: a console command that is not tabula: %s", i+1, l)
			}
			steps = append(steps, consoleStep{line: i + 1, args: args[1:]})
		case in && len(steps) > 0:
			steps[len(steps)-1].want += l + "\n"
		}
	}
	return steps
}

// shellWords splits a command line as a POSIX shell does for the forms
// the guide uses: blanks between words, 'single' and "double" quotes
// (a backslash escapes " and \ inside double quotes).
func shellWords(t *testing.T, line int, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				t.Fatalf("docs/SCHEMA-DESIGN.md:%d: unterminated ' in %s", line, s)
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) && (s[j+1] == '"' || s[j+1] == '\\') {
					j++
				}
				cur.WriteByte(s[j])
			}
			if j == len(s) {
				t.Fatalf("docs/SCHEMA-DESIGN.md:%d: unterminated \" in %s", line, s)
			}
			i = j
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

var transcriptTimestamp = regexp.MustCompile(`@\d{16}\b`)

func normalizeTranscript(s string) string {
	var lines []string
	for l := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		lines = append(lines, transcriptTimestamp.ReplaceAllString(strings.Join(strings.Fields(l), " "), "@T"))
	}
	return strings.Join(lines, "\n")
}
