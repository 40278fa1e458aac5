package master

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/storepath"
)

// FuzzCreateTableRequest: whatever a CreateTable request carries (any
// bytes as a schema message, any split keys), checking it never panics,
// refuses with INVALID_ARGUMENT, and what it accepts has a name that is one
// plain path element and split keys that are valid, sorted rows.
func FuzzCreateTableRequest(f *testing.F) {
	good, _ := proto.Marshal(&tabulapb.TableSchema{Name: "users", Families: []*tabulapb.Family{{Name: "cf", MaxVersions: 3}}})
	f.Add(good, []byte("m"), []byte("t"))
	for _, name := range []string{"..", ".", "a/b", "", "-x"} {
		b, _ := proto.Marshal(&tabulapb.TableSchema{Name: name})
		f.Add(b, []byte{}, []byte("a"))
	}
	f.Fuzz(func(t *testing.T, schemaBytes, k1, k2 []byte) {
		var s tabulapb.TableSchema
		if proto.Unmarshal(schemaBytes, &s) != nil {
			return
		}
		out, err := checkSchema(&s)
		if err != nil {
			if !errors.Is(err, cell.ErrInvalid) {
				t.Fatalf("checkSchema refused with %v, not an invalid-argument error", err)
			}
			return
		}
		if _, err := storepath.Table("/srv/tabula", out.GetName()); err != nil {
			t.Fatalf("checkSchema accepted table name %q, which is not a plain path element: %v", out.GetName(), err)
		}
		if err := checkSplitKeys([][]byte{k1, k2}); err == nil {
			if cell.ValidateRow(k1) != nil || cell.ValidateRow(k2) != nil || string(k1) >= string(k2) {
				t.Fatalf("checkSplitKeys accepted %q, %q", k1, k2)
			}
		} else if !errors.Is(err, cell.ErrInvalid) {
			t.Fatalf("checkSplitKeys refused with %v", err)
		}
	})
}
