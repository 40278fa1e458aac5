package meta

import "testing"

func TestLogNames(t *testing.T) {
	for _, lease := range []int64{1, 0x694d7f2a1b3c4d5e, -1} {
		name := LogName(lease, 3)
		got, ok := LogLease(name)
		if !ok || got != lease {
			t.Errorf("LogLease(%q) = %x, %v; want %x", name, got, ok, lease)
		}
	}
	for _, bad := range []string{"", "reader-1", "0123456789abcdef", "0123456789abcdeg-1", "0123456789abcdef-x", "123-1"} {
		if _, ok := LogLease(bad); ok {
			t.Errorf("LogLease(%q) accepted a name LogName never makes", bad)
		}
	}
}
