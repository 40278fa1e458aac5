package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/meta"
)

// The commands that write etcd directly ("auth bootstrap": before any
// token exists, whoever can write etcd makes the first admin).

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
