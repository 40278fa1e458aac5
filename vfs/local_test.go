package vfs_test

import (
	"testing"

	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/vfs/vfstest"
)

func TestLocal(t *testing.T) { vfstest.Run(t, vfs.Default, t.TempDir()) }

func TestFaultyPassesThrough(t *testing.T) { vfstest.Run(t, vfs.NewFaulty(nil), t.TempDir()) }
