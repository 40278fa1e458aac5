package main

import (
	"strings"
	"testing"
)

// TestStorageSettingsAreChecked: a storage setting that cannot work stops
// the process at start with a message that says what is wrong.
func TestStorageSettingsAreChecked(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tabletserver", "--etcd", "127.0.0.1:1", "--storage", "/srv/tabula"}, "not an object store URL"},
		{[]string{"tabletserver", "--etcd", "127.0.0.1:1", "--storage", "s3://bkt?colour=red"}, `unknown parameter "colour"`},
		{[]string{"tabletserver", "--etcd", "127.0.0.1:1", "--storage", "s3://bkt?endpoint=ftp://h"}, "must be http://HOST:PORT"},
		{[]string{"master", "--etcd", "127.0.0.1:1", "--storage", "s3://bkt?endpoint=http://127.0.0.1:1", "--storage-root", "/srv"}, "not both"},
		{[]string{"dev", "--data", t.TempDir(), "--storage", "s3://?endpoint=http://127.0.0.1:1"}, "want s3://BUCKET"},
	} {
		r := tabulaEnv(t, nil, c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("tabula %s: exit %d, stderr %q; want an error containing %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
}
