package vfs

import (
	"path/filepath"
	"slices"
	"strings"
)

// ListLag makes Faulty's listing eventually consistent, as an object
// store's LIST may be while a GET or HEAD of a new name already finds it:
// until the returned catchUp is called, List leaves out the files and
// folders that were created (Create, MkdirAll) or renamed into place since
// ListLag was called, and still shows the files removed or renamed away
// since, for the paths match accepts (nil: every path). Open and Stat see
// the truth all along. Files
// appear at Create (on the local disk, not at Close); RemoveAll is not
// tracked. Faulty lists whole files: a missing middle part of a
// multi-part object is the object store backend's own concern.
//
//	catchUp := ffs.ListLag(func(p string) bool { return strings.Contains(p, "MANIFEST") })
//	save()            // a new manifest version: Stat finds it, List does not
//	open()            // what does the next owner make of the listing?
//	catchUp()
//
// Several lags may be open at once; each hides what happened in its own
// window.
func (f *Faulty) ListLag(match func(path string) bool) (catchUp func()) {
	l := &listLag{match: match, hidden: map[string]bool{}, ghosts: map[string]bool{}}
	f.lagMu.Lock()
	f.lags = append(f.lags, l)
	f.lagMu.Unlock()
	return func() {
		f.lagMu.Lock()
		defer f.lagMu.Unlock()
		f.lags = slices.DeleteFunc(f.lags, func(o *listLag) bool { return o == l })
	}
}

// listLag is one window of ListLag; Faulty.lagMu protects it.
type listLag struct {
	match  func(path string) bool
	hidden map[string]bool // created in the window: not listed
	ghosts map[string]bool // removed in the window: still listed
}

func (l *listLag) accepts(path string) bool { return l.match == nil || l.match(path) }

// appeared records that path was created or renamed into place.
func (f *Faulty) appeared(path string) {
	path = filepath.Clean(path)
	f.lagMu.Lock()
	defer f.lagMu.Unlock()
	for _, l := range f.lags {
		if !l.accepts(path) {
			continue
		}
		if l.ghosts[path] {
			delete(l.ghosts, path) // removed and made again: the listing is right
			continue
		}
		l.hidden[path] = true
	}
}

// vanished records that path was removed or renamed away.
func (f *Faulty) vanished(path string) {
	path = filepath.Clean(path)
	f.lagMu.Lock()
	defer f.lagMu.Unlock()
	for _, l := range f.lags {
		if !l.accepts(path) {
			continue
		}
		if l.hidden[path] {
			delete(l.hidden, path) // made and removed in the window: never listed
			continue
		}
		l.ghosts[path] = true
	}
}

// lagged returns the listing of dir as the open lags show it.
func (f *Faulty) lagged(dir string, entries []Entry) []Entry {
	f.lagMu.Lock()
	defer f.lagMu.Unlock()
	if len(f.lags) == 0 {
		return entries
	}
	dir = filepath.Clean(dir)
	hide := func(name string) bool {
		for _, l := range f.lags {
			if l.hidden[filepath.Join(dir, name)] {
				return true
			}
		}
		return false
	}
	out := slices.DeleteFunc(entries, func(e Entry) bool { return hide(e.Name) })
	for _, l := range f.lags {
		for p := range l.ghosts {
			if filepath.Dir(p) != dir {
				continue
			}
			name := filepath.Base(p)
			if !slices.ContainsFunc(out, func(e Entry) bool { return e.Name == name }) {
				out = append(out, Entry{Name: name})
			}
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}
