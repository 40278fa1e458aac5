package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/quota"
)

// Quota commands (docs/OPERATIONS.md "Quotas"). They call the master's
// Quotas service, like "tabula namespace": the master checks the
// caller's role and validates the quota, then writes its etcd record,
// which the tablet servers follow by watch.

func newQuotaCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "quota",
		Short: "Set, list and remove request, bandwidth and space quotas",
		Long: `Quotas limit what a table, a namespace (the NS of tables named NS:TABLE;
unqualified names are in namespace "default") or a principal (a token's or
certificate's name) may do across the whole cluster: read and write
requests per second, read and write bytes per second, and (tables and
namespaces) stored bytes. Each tablet server enforces its share of a rate
limit: a table's by the part of its tablets it holds, a namespace's likewise,
a principal's as one over the live servers (so a principal that calls only k of
n servers gets k/n of its limit: size its quota as the rate wanted × n / k).
A refused call gets RESOURCE_EXHAUSTED naming the quota, with a RetryInfo
delay; nothing of it was applied, and Tabula's client waits the delay and
sends it again.

These commands call the master (--master, --token, TLS flags as every client
command). Setting or removing a table's quota needs the admin role on the
table (or its namespace, "NS:*", or the cluster); a namespace's or a
principal's needs the cluster's admin role; listing needs read on the
cluster.`,
	}
	c.AddCommand(newQuotaSetCmd(), newQuotaListCmd(), newQuotaRemoveCmd())
	return c
}

func quotaKey(cmd string, args []string) (quota.Key, error) {
	sc, err := quota.ParseScope(args[0])
	if err != nil {
		return quota.Key{}, &usageError{cmd: cmd, err: err}
	}
	if args[1] == "" {
		return quota.Key{}, &usageError{cmd: cmd, err: errors.New("the name is empty")}
	}
	return quota.Key{Scope: sc, Name: args[1]}, nil
}

func newQuotaSetCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "set table|namespace|principal NAME [--read-requests N] [--read-bytes SIZE] [--write-requests N] [--write-bytes SIZE] [--space SIZE]",
		Short: "Set the quota of a table, namespace or principal (replacing its limits)",
		Long: `Set the limits of one quota, replacing all of its previous limits: a limit
not given is no limit. Rates are per second across the whole cluster; sizes
take suffixes (64KiB, 10MiB, 1GiB). A write request is one row mutated (a
MutateRows of 100 rows counts 100); a read request is one call; a
CheckAndMutateRow counts one of each (as HBase's checkAndMutate). --space
(tables and namespaces only) refuses writes that store data while the stored
size, as the master last measured it, is at or past SIZE; deletes are still
accepted, and writes again once deletes and a compaction bring it under.`,
		Example: `  tabula quota set principal batch --write-requests 500 --write-bytes 10MiB
  tabula quota set namespace analytics --space 100GiB
  tabula quota set table events --read-requests 2000`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := quotaKey("quota set", args)
			if err != nil {
				return err
			}
			var r meta.QuotaRecord
			f := cmd.Flags()
			rate := func(name string, dst *float64) error {
				s, _ := f.GetString(name)
				if s == "" {
					return nil
				}
				n, err := strconv.ParseFloat(s, 64)
				if err != nil || n < 0 {
					return &usageError{cmd: "quota set", err: fmt.Errorf("--%s %q is not a rate (a number of requests a second)", name, s)}
				}
				*dst = n
				return nil
			}
			size := func(name string, dst *int64) error {
				s, _ := f.GetString(name)
				if s == "" {
					return nil
				}
				n, err := parseSize(s)
				if err != nil {
					return &usageError{cmd: "quota set", err: fmt.Errorf("--%s: %w", name, err)}
				}
				*dst = n
				return nil
			}
			var rb, wb int64
			for _, err := range []error{rate("read-requests", &r.ReadRequests), rate("write-requests", &r.WriteRequests),
				size("read-bytes", &rb), size("write-bytes", &wb), size("space", &r.SpaceBytes)} {
				if err != nil {
					return err
				}
			}
			r.ReadBytes, r.WriteBytes = float64(rb), float64(wb)
			if r == (meta.QuotaRecord{}) {
				return &usageError{cmd: "quota set", err: errors.New("no limit given; to drop a quota use \"tabula quota remove\"")}
			}
			if r.SpaceBytes > 0 && k.Scope == quota.Principal {
				return &usageError{cmd: "quota set", err: errors.New("--space applies to tables and namespaces, not principals: limit the namespace or the tables the principal writes")}
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			q := client.QuotaInfo{Scope: string(k.Scope), Name: k.Name, ReadRequests: r.ReadRequests, ReadBytes: r.ReadBytes,
				WriteRequests: r.WriteRequests, WriteBytes: r.WriteBytes, SpaceBytes: r.SpaceBytes}
			if err := s.cli.Admin().SetQuota(s.ctx, q); err != nil {
				return wrapf(err, "setting the quota of %s", k)
			}
			return s.out.message("set the quota of "+k.String(), "set", k.String())
		},
	}
	for _, fl := range []struct{ name, help string }{
		{"read-requests", "read calls a second"},
		{"read-bytes", "bytes read a second (e.g. 10MiB)"},
		{"write-requests", "rows written a second"},
		{"write-bytes", "bytes written a second (e.g. 10MiB)"},
		{"space", "stored bytes (tables and namespaces; e.g. 100GiB)"},
	} {
		c.Flags().String(fl.name, "", fl.help+"; unset: no limit")
	}
	return c
}

func newQuotaListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "List every quota with its limits and the space usage the master last published",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			qs, err := s.cli.Admin().ListQuotas(s.ctx)
			if err != nil {
				return wrapf(err, "listing quotas")
			}
			num := func(f float64) any {
				if f == 0 {
					return "-"
				}
				return f
			}
			var rows [][]any
			for _, q := range qs {
				used := any("-")
				if q.HasUsage {
					used = q.Used
				}
				rows = append(rows, []any{q.Scope, q.Name, num(q.ReadRequests), num(q.ReadBytes), num(q.WriteRequests), num(q.WriteBytes), num(float64(q.SpaceBytes)), used})
			}
			return s.out.table([]string{"scope", "name", "read_requests", "read_bytes", "write_requests", "write_bytes", "space_bytes", "used_bytes"}, rows)
		},
	}
	return c
}

func newQuotaRemoveCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "remove table|namespace|principal NAME",
		Short:   "Remove the quota of a table, namespace or principal",
		Example: "  tabula quota remove principal batch",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := quotaKey("quota remove", args)
			if err != nil {
				return err
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.cli.Admin().RemoveQuota(s.ctx, string(k.Scope), k.Name); err != nil {
				return wrapf(err, "removing the quota of %s", k)
			}
			return s.out.message("removed the quota of "+k.String(), "removed", k.String())
		},
	}
	return c
}
