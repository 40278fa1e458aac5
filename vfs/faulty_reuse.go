package vfs

// Reuse reuses oldname as newname on the inner FS unless the injector
// fails it. It is a creation of newname to the injector (OpCreate, named
// by newname): a test that fails the creation of a commit log segment
// fails it whether the log creates the file or recycles an old one. A
// file reused after (or late) is closed: the caller never got it. An
// inner FS that is not a Reuser gives errors.ErrUnsupported.
func (f *Faulty) Reuse(oldname, newname string) (Writable, error) {
	r, ok := f.inner.(Reuser)
	if !ok {
		return nil, errReuseUnsupported
	}
	var w Writable
	err := f.do(OpCreate, newname, func() error {
		iw, err := r.Reuse(oldname, newname)
		if err == nil {
			f.vanished(oldname)
			f.appeared(newname)
		}
		w = iw
		return err
	})
	if err != nil {
		if w != nil {
			_ = w.Close()
		}
		return nil, err
	}
	return &faultyWriter{Writable: w, f: f, name: newname}, nil
}

var _ Reuser = (*Faulty)(nil)
