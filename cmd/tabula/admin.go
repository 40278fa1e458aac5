package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
)

func newTableCmd() *cobra.Command {
	c := &cobra.Command{Use: "table", Short: "Create, list, describe, protect, delete, split, flush and compact tables, drop rows in bulk, and cut them into key ranges"}
	c.AddCommand(newTableCreateCmd(), newTableListCmd(), newTableDescribeCmd(), newTableDeleteCmd(),
		newTableTabletsCmd(), newTableSplitCmd(), newTableFlushCmd(), newTableCompactCmd(), newTableDropRowsCmd())
	c.AddCommand(newTableMergeCmd())
	c.AddCommand(newTableRangesCmd())
	c.AddCommand(newTableAutoMergeCmd())
	c.AddCommand(newTableProtectCmd(true), newTableProtectCmd(false))
	return c
}

func newTableCreateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "create TABLE --family NAME[:OPTIONS] ... [--splits KEY,KEY,...]",
		Short: "Create a table with its column families, optionally pre-split",
		Long: `Create a table. Each --family takes NAME[:OPTION=VALUE,...] with options
  versions=N (0: no limit)   ttl=DURATION (90m, 36h, 7d; 0: none)   gc=union|intersection
  compression=none|snappy|zstd (default snappy)   bloom=none|row|row+column (default row)
  blocksize=N[k|m]   inmemory=true|false
  type=bytes|sum|min|max (default bytes; an int64 aggregate written with ` + "`tabula add`" + `, fixed at creation)
or, instead of versions, ttl and gc=union|intersection, a nested GC rule as Cloud
Bigtable has it: gc=RULE with RULE one of
  versions=N   age=DURATION   union(RULE,...)   intersection(RULE,...)
(a union condemns what any rule does, an intersection what every one does; an
empty union() or intersection() condemns nothing). Quote it for the shell:
  --family 'events:gc=union(versions=3,intersection(age=7d,versions=1))'
--splits gives row keys where the table starts out split into tablets.`,
		Example: "  tabula table create users --family profile:versions=3 --family log:ttl=7d,compression=zstd --splits g,n,t",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			specs, _ := cmd.Flags().GetStringArray("family")
			splits, _ := cmd.Flags().GetStringSlice("splits")
			args[0] = cell.CanonicalTableName(args[0]) // "default:T" is T
			if err := cell.ValidateTableName(args[0]); err != nil {
				return err
			}
			if len(specs) == 0 {
				return cell.Invalidf("table %s needs at least one --family NAME[:OPTIONS]", args[0])
			}
			var fams []families.Family
			for _, s := range specs {
				f, err := families.Parse(s)
				if err != nil {
					return err
				}
				fams = append(fams, f)
			}
			var keys [][]byte
			for _, k := range splits {
				if k == "" {
					return cell.Invalidf("--splits has an empty key; give non-empty row keys separated by commas")
				}
				keys = append(keys, []byte(k))
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			noMerge, _ := cmd.Flags().GetBool("no-auto-merge")
			protect, _ := cmd.Flags().GetBool("deletion-protection")
			info := client.TableInfo{Name: args[0], Families: fams, AutoMergeDisabled: noMerge, DeletionProtection: protect}
			if err := s.cli.Admin().CreateTableWithInfo(s.ctx, info, keys); err != nil {
				return wrapf(err, "creating table %s", args[0])
			}
			return s.out.message(fmt.Sprintf("created table %s with %d tablet(s)", args[0], len(keys)+1), "created", args[0])
		},
	}
	c.Flags().StringArray("family", nil, "a column family NAME[:OPTION=VALUE,...]; repeat for more")
	c.Flags().StringSlice("splits", nil, "pre-split row keys, comma-separated")
	c.Flags().Bool("no-auto-merge", false, "keep the automatic merge of small, cold tablets away from this table")
	c.Flags().Bool("deletion-protection", false, "refuse deleting the table or its families until `tabula table unprotect`")
	return c
}

func newTableListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list [--namespace NS]",
		Short: "List tables (those of one namespace with --namespace)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			tables, err := s.cli.Admin().ListTables(s.ctx)
			if err != nil {
				return wrapf(err, "listing tables")
			}
			ns, _ := cmd.Flags().GetString("namespace")
			var rows [][]any
			for _, t := range tables {
				if ns != "" && !cell.InNamespace(t.Name, ns) {
					continue
				}
				var names []string
				for _, f := range t.Families {
					names = append(names, f.Name)
				}
				rows = append(rows, []any{t.Name, strings.Join(names, ",")})
			}
			return s.out.table([]string{"name", "families"}, rows)
		},
	}
	c.Flags().String("namespace", "", "list only this namespace's tables (\"default\": those named without a prefix)")
	return c
}

func newTableDescribeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "describe TABLE",
		Short: "Show a table's families, split threshold and tablets with their sizes",
		Long: `Show a table's settings: its families with their options in the units they
are typed in (ttl=30d, gc=union(versions=3,age=36h)), the split threshold in
force (the table's, or the cluster's default), the switches, and its tablets
with their key ranges, servers and sizes (from the leading master's latest
load report, collected every master --load-interval: a new tablet shows 0B
until then).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			t, err := s.cli.Admin().DescribeTable(s.ctx, args[0])
			if err != nil {
				return wrapf(err, "describing table %s", args[0])
			}
			if s.out.json {
				fams := make([]map[string]any, 0, len(t.Families))
				for _, f := range t.Families {
					fams = append(fams, familyJSON(f))
				}
				keys := make([]string, len(t.UserSplitKeys))
				for i, k := range t.UserSplitKeys {
					keys[i] = string(k)
				}
				tablets := make([]map[string]any, 0, len(t.Tablets))
				for _, tb := range t.Tablets {
					tablets = append(tablets, map[string]any{"id": tb.ID, "start": string(tb.Start), "end": string(tb.End),
						"server": tb.Server, "state": tb.State, "size_bytes": tb.Load.SizeBytes, "sstables": tb.Load.SSTables})
				}
				return s.out.object(map[string]any{
					"name": t.Name, "families": fams, "split_threshold": t.SplitThreshold,
					"split_threshold_in_force": t.SplitThresholdInForce, "tablets": len(t.Tablets), "tablet_list": tablets,
					"balancer": !t.BalancerDisabled, "auto_merge": !t.AutoMergeDisabled, "user_split_keys": keys,
					"deletion_protection": t.DeletionProtection,
				})
			}
			w := s.out.w
			fmt.Fprintf(w, "table %s\n", t.Name)
			switch {
			case t.SplitThreshold > 0:
				fmt.Fprintf(w, "split threshold: %s\n", exactSize(t.SplitThreshold))
			case t.SplitThresholdInForce > 0:
				fmt.Fprintf(w, "split threshold: %s (the cluster's default)\n", exactSize(t.SplitThresholdInForce))
			}
			fmt.Fprintf(w, "balancer: %s\nautomatic merge: %s\n", onOff(!t.BalancerDisabled), onOff(!t.AutoMergeDisabled))
			fmt.Fprintf(w, "deletion protection: %s\n", onOff(t.DeletionProtection))
			if len(t.UserSplitKeys) > 0 {
				keys := make([]string, len(t.UserSplitKeys))
				for i, k := range t.UserSplitKeys {
					keys[i] = display(k)
				}
				fmt.Fprintf(w, "user split keys (kept by the automatic merge): %s\n", strings.Join(keys, " "))
			}
			fmt.Fprintln(w, "families:")
			for _, f := range t.Families {
				gc := fmt.Sprintf("versions=%d ttl=%s gc=%s", f.MaxVersions, families.FormatDuration(f.TTL), f.GC)
				if f.GCRule != nil {
					gc = "gc=" + f.GCRule.String()
				}
				fmt.Fprintf(w, "  %s\t%s compression=%s bloom=%s blocksize=%d inmemory=%t type=%s\n",
					f.Name, gc, f.Compression, f.Bloom, f.BlockSize, f.InMemory, f.ValueType)
			}
			var total int64
			for _, tb := range t.Tablets {
				total += tb.Load.SizeBytes
			}
			fmt.Fprintf(w, "tablets: %d, %s\n", len(t.Tablets), sizeText(total))
			var rows [][]any
			for _, tb := range t.Tablets {
				rows = append(rows, []any{"  " + tb.ID, keyText(tb.Start, "-inf"), keyText(tb.End, "+inf"), tb.Server, tb.State, sizeText(tb.Load.SizeBytes), tb.Load.SSTables})
			}
			return s.out.table([]string{"  id", "start", "end", "server", "state", "size", "sstables"}, rows)
		},
	}
}

// exactSize prints a byte count in the largest binary unit that divides
// it (256MiB), as parseSize reads it back; else in bytes.
func exactSize(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n > 0 && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}

func familyJSON(f families.Family) map[string]any {
	return map[string]any{
		"name": f.Name, "versions": f.MaxVersions, "ttl": families.FormatDuration(f.TTL), "gc": f.GC.String(),
		"compression": f.Compression.String(), "bloom": f.Bloom.String(), "blocksize": f.BlockSize,
		"inmemory": f.InMemory, "gc_rule": f.GCRule.String(), "type": f.ValueType.String(), "spec": f.Spec(),
	}
}

func newTableDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete TABLE",
		Short: "Delete a table and all its data",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.cli.Admin().DeleteTable(s.ctx, args[0]); err != nil {
				return wrapf(err, "deleting table %s", args[0])
			}
			return s.out.message("deleted table "+args[0], "deleted", args[0])
		},
	}
}

// newTableProtectCmd is `tabula table protect TABLE` (on) and `tabula
// table unprotect TABLE`.
func newTableProtectCmd(on bool) *cobra.Command {
	use, short, long := "protect", "Protect a table from deletion: refuse deleting it or its families",
		"Set TABLE's deletion protection: deleting the table or any of its families is\nthen refused (FAILED_PRECONDITION) through every API (the CLI, the native admin\nAPI, the Bigtable gateway) until `tabula table unprotect TABLE`. Rows can still\nbe deleted and dropped. `tabula table describe TABLE` shows it."
	if !on {
		use, short, long = "unprotect", "Lift a table's deletion protection",
			"Clear TABLE's deletion protection (set by `tabula table protect` or `tabula\ntable create --deletion-protection`): the table and its families can be deleted\nagain."
	}
	return &cobra.Command{
		Use:   use + " TABLE",
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.cli.Admin().SetDeletionProtection(s.ctx, args[0], on); err != nil {
				return wrapf(err, "switching the deletion protection of %s %s", args[0], onOff(on))
			}
			return s.out.message(fmt.Sprintf("deletion protection of %s: %s", args[0], onOff(on)), "deletion_protection", on)
		},
	}
}

func newTableTabletsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "tablets TABLE",
		Short: "List a table's tablets: key ranges, servers, epochs, states, size, SSTables and load",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			ts, err := s.cli.Admin().Tablets(s.ctx, args[0])
			if err != nil {
				return wrapf(err, "listing the tablets of %s", args[0])
			}
			return printTablets(s.out, ts)
		},
	}
}

func newTableCompactCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "compact TABLE [--major]",
		Short: "Compact every tablet of a table (--major: rewrite each family into one file)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			major, _ := cmd.Flags().GetBool("major")
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.cli.Admin().CompactTable(s.ctx, args[0], major); err != nil {
				return wrapf(err, "compacting %s", args[0])
			}
			return s.out.message("compacted "+args[0], "compacted", args[0])
		},
	}
	c.Flags().Bool("major", false, "major compaction: drop deleted and expired cells, one file per family")
	return c
}

func newTableDropRowsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "drop-rows TABLE (--prefix P | --all)",
		Short: "Delete every row with a key prefix, or every row, in bulk (whole files, not cell by cell)",
		Long: `Delete in bulk every row of TABLE whose key starts with --prefix, or every
row with --all (the table and its families stay). Each tablet drops whole
SSTables instead of writing a deletion per cell, so it is fast whatever the
rows hold. Cells written before the command are gone for good once it
returns; it cannot be undone. Needs the admin role on the table.`,
		Example: "  tabula table drop-rows users --prefix 'tmp#'\n  tabula table drop-rows users --all",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prefix, _ := cmd.Flags().GetString("prefix")
			all, _ := cmd.Flags().GetBool("all")
			args[0] = cell.CanonicalTableName(args[0]) // "default:T" is T
			if err := cell.ValidateTableName(args[0]); err != nil {
				return err
			}
			if (prefix == "") == !all {
				return cell.Invalidf("give exactly one of --prefix P (non-empty) and --all")
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			prog := startProgress(cmd, "drop-rows") // a spinner on a terminal: one call, nothing to count
			defer prog.stop()
			if all {
				err := s.cli.Admin().DropAllRows(s.ctx, args[0])
				prog.stop()
				if err != nil {
					return wrapf(err, "dropping every row of %s", args[0])
				}
				return s.out.message("dropped every row of "+args[0], "dropped", args[0])
			}
			err = s.cli.Admin().DropRowRange(s.ctx, args[0], []byte(prefix))
			prog.stop()
			if err != nil {
				return wrapf(err, "dropping rows %q... of %s", prefix, args[0])
			}
			return s.out.message(fmt.Sprintf("dropped rows %q... of %s", prefix, args[0]), "dropped", args[0])
		},
	}
	c.Flags().String("prefix", "", "drop the rows whose key starts with this")
	c.Flags().Bool("all", false, "drop every row of the table")
	return c
}

func newFamilyCmd() *cobra.Command {
	c := &cobra.Command{Use: "family", Short: "Add, modify or delete a table's column families"}
	c.AddCommand(
		&cobra.Command{
			Use:     "add TABLE NAME[:OPTIONS]",
			Short:   "Add a column family (options as in `table create`)",
			Example: "  tabula family add users log:ttl=7d,versions=1",
			Args:    cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				f, err := families.Parse(args[1])
				if err != nil {
					return err
				}
				s, err := connect(cmd)
				if err != nil {
					return err
				}
				defer s.close()
				if err := s.cli.Admin().AddFamily(s.ctx, args[0], f); err != nil {
					return wrapf(err, "adding family %s to %s", f.Name, args[0])
				}
				return s.out.message(fmt.Sprintf("added family %s to %s", f.Spec(), args[0]), "added", f.Spec())
			},
		},
		&cobra.Command{
			Use:   "modify TABLE NAME:OPTIONS",
			Short: "Change some options of a column family; the others keep their values",
			Long: `Change some options of a column family (options as in ` + "`table create`" + `); the others
keep their values. The GC policy is either versions, ttl and gc=union|intersection, or a
nested gc=RULE: giving options of one form replaces the other form.`,
			Example: "  tabula family modify users profile:versions=5\n  tabula family modify users 'events:gc=intersection(age=30d,versions=1)'",
			Args:    cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				name, opts, _ := strings.Cut(args[1], ":")
				if err := cell.ValidateFamilyName(name); err != nil {
					return err
				}
				if strings.TrimSpace(opts) == "" {
					return cell.Invalidf("family %s: no options to change; write NAME:OPTION=VALUE,...", name)
				}
				s, err := connect(cmd)
				if err != nil {
					return err
				}
				defer s.close()
				t, err := s.cli.Admin().DescribeTable(s.ctx, args[0])
				if err != nil {
					return wrapf(err, "reading table %s", args[0])
				}
				var cur *families.Family
				for i := range t.Families {
					if t.Families[i].Name == name {
						cur = &t.Families[i]
					}
				}
				if cur == nil {
					return fmt.Errorf("table %s has no family %s; add it with `tabula family add %s %s`: %w", args[0], name, args[0], name, errNoFamily)
				}
				f, err := families.ApplyOptions(*cur, opts)
				if err != nil {
					return err
				}
				if err := s.cli.Admin().ModifyFamily(s.ctx, args[0], f); err != nil {
					return wrapf(err, "modifying family %s of %s", name, args[0])
				}
				return s.out.message(fmt.Sprintf("modified family of %s: %s", args[0], f.Spec()), "modified", f.Spec())
			},
		},
		&cobra.Command{
			Use:   "delete TABLE NAME",
			Short: "Delete a column family and its data",
			Args:  cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				s, err := connect(cmd)
				if err != nil {
					return err
				}
				defer s.close()
				if err := s.cli.Admin().DeleteFamily(s.ctx, args[0], args[1]); err != nil {
					return wrapf(err, "deleting family %s of %s", args[1], args[0])
				}
				return s.out.message(fmt.Sprintf("deleted family %s of %s", args[1], args[0]), "deleted", args[1])
			},
		},
	)
	return c
}

func newServersCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "servers",
		Short: "List the live tablet servers: tablets, size, SSTables and load of each",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			servers, err := s.cli.Admin().Servers(s.ctx)
			if err != nil {
				return wrapf(err, "listing servers")
			}
			return printServers(s.out, servers)
		},
	}
}
