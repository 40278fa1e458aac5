package tablet

import (
	"sort"
	"sync/atomic"

	"github.com/tabuladb/tabula/manifest"
)

// version is an immutable set of SSTables per family (newest first, by
// MaxSeq). Readers hold a reference for as long as they read its files.
type version struct {
	files map[string][]*tableFile
	// runs are each family's sorted runs (runs.go), newest first.
	runs map[string][]run
	refs atomic.Int32
}

func newVersion(files map[string][]*tableFile) *version {
	v := &version{files: files, runs: make(map[string][]run, len(files))}
	for name, fs := range files {
		for _, f := range fs {
			f.refs.Add(1)
		}
		v.runs[name] = sortedRuns(fs)
	}
	v.refs.Store(1)
	return v
}

func (v *version) ref() { v.refs.Add(1) }

func (v *version) unref() {
	if v.refs.Add(-1) != 0 {
		return
	}
	for _, fs := range v.files {
		for _, f := range fs {
			f.unref()
		}
	}
}

// refs returns the manifest records of every file, families by name,
// newest first within a family.
func (v *version) fileRefs() []manifest.FileRef {
	names := make([]string, 0, len(v.files))
	for n := range v.files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []manifest.FileRef
	for _, n := range names {
		for _, f := range v.files[n] {
			out = append(out, f.ref)
		}
	}
	return out
}

// edit returns a copy of the files map with fn applied to one family's list.
func (v *version) edit(family string, fn func([]*tableFile) []*tableFile) map[string][]*tableFile {
	out := make(map[string][]*tableFile, len(v.files)+1)
	for k, fs := range v.files {
		out[k] = fs
	}
	fs := fn(append([]*tableFile(nil), v.files[family]...))
	sortNewestFirst(fs)
	if len(fs) == 0 {
		delete(out, family)
	} else {
		out[family] = fs
	}
	return out
}

func sortNewestFirst(fs []*tableFile) {
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].ref.MaxSeq > fs[j].ref.MaxSeq })
}
