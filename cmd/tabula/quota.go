package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/quota"
)

// Quota commands (docs/OPERATIONS.md "Quotas"). They write the quota
// records of etcd directly, as "auth bootstrap" does: whoever can write
// etcd controls the cluster anyway, and the tablet servers follow the
// records by watch.

func newQuotaCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "quota",
		Short: "Set, list and remove request, bandwidth and space quotas (written straight to etcd)",
		Long: `Quotas limit what a table, a namespace (the NS of tables named NS:TABLE;
unqualified names are in namespace "default") or a principal (a token's or
certificate's name) may do across the whole cluster: read and write
requests per second, read and write bytes per second, and (tables and
namespaces) stored bytes. Each tablet server enforces its share of a rate
limit: a table's by the part of its tablets it holds, a namespace's likewise,
a principal's as one over the live servers. A refused call gets
RESOURCE_EXHAUSTED naming the quota, with a RetryInfo delay; nothing of it was
applied, and Tabula's client waits the delay and sends it again.

These commands write etcd directly (like "auth bootstrap"): they need etcd's
address and, if etcd uses TLS, a client certificate etcd accepts.`,
	}
	c.AddCommand(newQuotaSetCmd(), newQuotaListCmd(), newQuotaRemoveCmd())
	return c
}

// etcdFlags are the flags of a command that writes etcd directly.
func etcdFlags(c *cobra.Command) {
	addEtcdTLSFlags(c)
	c.Flags().String("etcd", "127.0.0.1:2379", "etcd endpoints host:port, comma-separated")
	c.Flags().String("cluster", "default", "cluster name: etcd keys live under /tabula/<cluster>/")
}

// etcdSession is what a command that writes etcd directly works with.
type etcdSession struct {
	ctx    context.Context
	store  meta.Store
	layout meta.Layout
	out    *printer
}

// withEtcd runs fn with an etcd client of the command's flags (etcdFlags).
func withEtcd(cmd *cobra.Command, fn func(s etcdSession) error) error {
	v, err := settings(cmd)
	if err != nil {
		return err
	}
	etls, err := etcdTLS(v)
	if err != nil {
		return err
	}
	out, err := newPrinter(cmd.OutOrStdout(), v.GetString("output"))
	if err != nil {
		return err
	}
	ctx, end := commandContext(cmd, v)
	defer end()
	cli, err := meta.NewClient(ctx, stringList(v, "etcd"), etls)
	if err != nil {
		return wrapf(err, "connecting to etcd")
	}
	defer cli.Close()
	return fn(etcdSession{ctx: ctx, store: cli, layout: meta.NewLayout(v.GetString("cluster")), out: out})
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
MutateRows of 100 rows counts 100); a read request is one call. --space
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
				return &usageError{cmd: "quota set", err: errors.New("--space applies to tables and namespaces, not principals")}
			}
			return withEtcd(cmd, func(s etcdSession) error {
				if err := meta.PutQuota(s.ctx, s.store, s.layout, string(k.Scope), k.Name, r); err != nil {
					return wrapf(err, "setting the quota of %s", k)
				}
				return s.out.message("set the quota of "+k.String(), "set", k.String())
			})
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
	etcdFlags(c)
	return c
}

func newQuotaListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "List every quota with its limits and the space usage the master last published",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEtcd(cmd, func(s etcdSession) error {
				entries, _, err := meta.LoadQuotas(s.ctx, s.store, s.layout)
				if err != nil {
					return wrapf(err, "listing quotas")
				}
				usage := map[quota.Key]int64{}
				for _, e := range entries {
					if e.IsUsage && e.Err == nil {
						usage[quota.Key{Scope: quota.Scope(e.Scope), Name: e.Name}] = e.Usage.Bytes
					}
				}
				num := func(f float64) any {
					if f == 0 {
						return "-"
					}
					return f
				}
				var rows [][]any
				for _, e := range entries {
					if e.IsUsage || e.Err != nil {
						continue
					}
					r := e.Limits
					used := any("-")
					if u, ok := usage[quota.Key{Scope: quota.Scope(e.Scope), Name: e.Name}]; ok {
						used = u
					}
					rows = append(rows, []any{e.Scope, e.Name, num(r.ReadRequests), num(r.ReadBytes), num(r.WriteRequests), num(r.WriteBytes), num(float64(r.SpaceBytes)), used})
				}
				return s.out.table([]string{"scope", "name", "read_requests", "read_bytes", "write_requests", "write_bytes", "space_bytes", "used_bytes"}, rows)
			})
		},
	}
	etcdFlags(c)
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
			return withEtcd(cmd, func(s etcdSession) error {
				if err := meta.DeleteQuota(s.ctx, s.store, s.layout, string(k.Scope), k.Name); err != nil {
					return wrapf(err, "removing the quota of %s", k)
				}
				return s.out.message("removed the quota of "+k.String(), "removed", k.String())
			})
		},
	}
	etcdFlags(c)
	return c
}
