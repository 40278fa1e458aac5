package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/meta"
)

func newAuthCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "auth",
		Short: "Manage bearer tokens and roles (read, write, admin) of a secured cluster",
		Long: `Manage who may do what on a cluster started with --auth (see
docs/OPERATIONS.md "Security"). A principal is a name: a token stands for
one, and a client certificate's common name is one. Roles, each including
the ones before it: read (read rows, describe), write (write rows), admin
(schema changes, compaction, delete; on "*" also tokens, grants and the
cluster). A grant on table "*" applies to every table.
Every command but "bootstrap" and "whoami" needs the admin role on "*".`,
	}
	tok := &cobra.Command{Use: "token", Short: "Create, list and revoke bearer tokens"}
	tok.AddCommand(newTokenCreateCmd(), newTokenListCmd(), newTokenRevokeCmd())
	c.AddCommand(tok, newGrantCmd(), newRevokeCmd(), newGrantListCmd(), newWhoAmICmd(), newBootstrapCmd())
	return c
}

func newTokenCreateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "create PRINCIPAL [--description TEXT]",
		Short: "Issue a token for a principal; the token is printed once and stored only hashed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			desc, _ := cmd.Flags().GetString("description")
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			token, info, err := s.cli.Admin().CreateToken(s.ctx, args[0], desc)
			if err != nil {
				return wrapf(err, "creating a token for %s", args[0])
			}
			if s.out.json {
				return s.out.object(map[string]any{"token": token, "id": info.ID, "principal": info.Principal})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n(token id %s for %s: keep the token secret, it is not shown again; revoke it with \"tabula auth token revoke %s\")\n",
				token, info.ID, info.Principal, info.ID)
			return err
		},
	}
	c.Flags().String("description", "", "what the token is for (shown by list)")
	return c
}

func newTokenListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list [--principal NAME]",
		Short: "List tokens (ids, principals, descriptions; never the secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, _ := cmd.Flags().GetString("principal")
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			ts, err := s.cli.Admin().ListTokens(s.ctx, p)
			if err != nil {
				return wrapf(err, "listing tokens")
			}
			var rows [][]any
			for _, t := range ts {
				rows = append(rows, []any{t.ID, t.Principal, t.Created.UTC().Format(time.RFC3339), t.Description})
			}
			return s.out.table([]string{"id", "principal", "created", "description"}, rows)
		},
	}
	c.Flags().String("principal", "", "only this principal's tokens")
	return c
}

func newTokenRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token (by the id \"token list\" shows); calls using it are refused from then on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.cli.Admin().RevokeToken(s.ctx, args[0]); err != nil {
				return wrapf(err, "revoking token %s", args[0])
			}
			return s.out.message("revoked token "+args[0], "revoked", args[0])
		},
	}
}

func newGrantCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "grant PRINCIPAL TABLE|NS:*|* read|write|admin",
		Short:   "Give a principal a role on a table, on every table of namespace NS with \"NS:*\", or on every table with \"*\" (replaces its role there)",
		Example: "  tabula auth grant etl events write\n  tabula auth grant team-a 'analytics:*' write\n  tabula auth grant ops '*' admin",
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := auth.ParseRole(args[2]); err != nil {
				return err
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.cli.Admin().Grant(s.ctx, grantOf(args)); err != nil {
				return wrapf(err, "granting %s %s on %s", args[0], args[2], args[1])
			}
			return s.out.message(fmt.Sprintf("granted %s the %s role on %s", args[0], args[2], args[1]), "granted", args[0])
		},
	}
}

func newRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke PRINCIPAL TABLE|NS:*|*",
		Short: "Take away a principal's role on a table (or its \"*\" grant)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.cli.Admin().Revoke(s.ctx, args[0], args[1]); err != nil {
				return wrapf(err, "revoking %s's grant on %s", args[0], args[1])
			}
			return s.out.message(fmt.Sprintf("revoked %s's grant on %s", args[0], args[1]), "revoked", args[0])
		},
	}
}

func newGrantListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list [--principal NAME] [--table TABLE]",
		Short: "List grants",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, _ := cmd.Flags().GetString("principal")
			t, _ := cmd.Flags().GetString("table")
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			gs, err := s.cli.Admin().ListGrants(s.ctx, p, t)
			if err != nil {
				return wrapf(err, "listing grants")
			}
			var rows [][]any
			for _, g := range gs {
				rows = append(rows, []any{g.Principal, g.Table, g.Role})
			}
			return s.out.table([]string{"principal", "table", "role"}, rows)
		},
	}
	c.Flags().String("principal", "", "only this principal's grants")
	c.Flags().String("table", "", "only grants on this table (\"*\": the cluster-wide ones)")
	return c
}

func newWhoAmICmd() *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show who the cluster takes you for, and your grants",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			id, err := s.cli.Admin().WhoAmI(s.ctx)
			if err != nil {
				return wrapf(err, "asking who I am")
			}
			if s.out.json {
				return s.out.object(id)
			}
			name := id.Principal
			if name == "" {
				name = "(anonymous)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "principal %s (by %s); authentication %s\n", name, id.Method, map[bool]string{true: "required", false: "off"}[id.AuthEnabled])
			for _, g := range id.Grants {
				fmt.Fprintf(cmd.OutOrStdout(), "  %s on %s\n", g.Role, g.Table)
			}
			return nil
		},
	}
}

func newBootstrapCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bootstrap PRINCIPAL --etcd HOST:PORT,... [--etcd-ca ...]",
		Short: "Create the first admin: a token and the admin role on \"*\", written straight to etcd",
		Long: `Create the first administrator of a cluster: a token for PRINCIPAL and
the admin role on every table and the cluster. It writes to etcd directly
(no master needed), so it needs etcd's address and, if etcd uses TLS, a
client certificate etcd accepts: whoever can write etcd controls the
cluster anyway. Prints the token once.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEtcd(cmd, func(s etcdSession) error {
				token, info, err := bootstrapAdmin(s.ctx, s.store, s.layout, args[0])
				if err != nil {
					return wrapf(err, "bootstrapping %s", args[0])
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n(token id %s: %s has the admin role on \"*\"; keep the token secret)\n", token, info.ID, args[0])
				return err
			})
		},
	}
	etcdFlags(c)
	return c
}

// bootstrapAdmin gives principal a token and the cluster-wide admin role.
func bootstrapAdmin(ctx context.Context, kv meta.Store, l meta.Layout, principal string) (string, auth.TokenInfo, error) {
	if err := auth.SetGrant(ctx, kv, l, auth.Grant{Principal: principal, Table: auth.AllTables, Role: auth.Admin}); err != nil {
		return "", auth.TokenInfo{}, err
	}
	return auth.CreateToken(ctx, kv, l, principal, "bootstrap admin", time.Now())
}

func grantOf(args []string) client.Grant {
	return client.Grant{Principal: args[0], Table: args[1], Role: args[2]}
}
