package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
)

// The namespace commands (docs/OPERATIONS.md "Namespaces").

func newNamespaceCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "namespace",
		Short: "Create, list, describe, update and delete namespaces (tables named NS:TABLE)",
		Long: `A namespace groups tables as HBase's do: table "NS:TABLE" is in namespace NS,
a table named without a colon in the namespace "default" (which always exists;
"default:TABLE" and "TABLE" are the same table). In the Bigtable gateway a
namespace is an instance. Grant a role on every table of a namespace with
` + "`tabula auth grant PRINCIPAL 'NS:*' ROLE`" + `.`,
	}
	c.AddCommand(newNamespaceCreateCmd(), newNamespaceUpdateCmd(), newNamespaceListCmd(), newNamespaceDescribeCmd(), newNamespaceDeleteCmd())
	return c
}

func namespaceFlags(c *cobra.Command) {
	c.Flags().Int("max-tables", 0, "the most tables the namespace may hold (0: no limit)")
	c.Flags().String("description", "", "free text shown by describe (and as the Bigtable instance's display name)")
}

func namespaceInfoOf(cmd *cobra.Command, name string) (client.NamespaceInfo, error) {
	if err := cell.ValidateNamespaceName(name); err != nil {
		return client.NamespaceInfo{}, err
	}
	max, _ := cmd.Flags().GetInt("max-tables")
	if max < 0 {
		return client.NamespaceInfo{}, cell.Invalidf("--max-tables %d is negative: use 0 for no limit", max)
	}
	desc, _ := cmd.Flags().GetString("description")
	return client.NamespaceInfo{Name: name, MaxTables: max, Description: desc}, nil
}

func newNamespaceCreateCmd() *cobra.Command {
	return newNamespaceSetCmd("create", "created", "Create a namespace: 1 to 33 characters of A-Z a-z 0-9 _ -, starting with a letter, digit or _",
		"  tabula namespace create analytics --max-tables 100\n  tabula table create analytics:events --family e",
		func(s *session, ni client.NamespaceInfo) error { return s.cli.Admin().CreateNamespace(s.ctx, ni) })
}

func newNamespaceUpdateCmd() *cobra.Command {
	return newNamespaceSetCmd("update", "updated", "Replace a namespace's settings (an unset flag clears its setting)",
		"  tabula namespace update analytics --max-tables 200",
		func(s *session, ni client.NamespaceInfo) error { return s.cli.Admin().UpdateNamespace(s.ctx, ni) })
}

// newNamespaceSetCmd is create or update: the same flags, one call.
func newNamespaceSetCmd(verb, done, short, example string, call func(*session, client.NamespaceInfo) error) *cobra.Command {
	c := &cobra.Command{
		Use:     verb + " NAMESPACE [--max-tables N] [--description TEXT]",
		Short:   short,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ni, err := namespaceInfoOf(cmd, args[0])
			if err != nil {
				return err
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := call(s, ni); err != nil {
				return wrapf(err, "%s namespace %s", strings.TrimSuffix(verb, "e")+"ing", args[0])
			}
			return s.out.message(done+" namespace "+args[0], done, args[0])
		},
	}
	namespaceFlags(c)
	return c
}

func newNamespaceListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List namespaces (default included)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			nss, err := s.cli.Admin().ListNamespaces(s.ctx)
			if err != nil {
				return wrapf(err, "listing namespaces")
			}
			var rows [][]any
			for _, n := range nss {
				rows = append(rows, []any{n.Name, n.MaxTables, n.Description})
			}
			return s.out.table([]string{"name", "max_tables", "description"}, rows)
		},
	}
}

func newNamespaceDescribeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAMESPACE",
		Short: "Show a namespace's settings and tables",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cell.ValidateNamespaceName(args[0]); err != nil {
				return err
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			ni, err := s.cli.Admin().DescribeNamespace(s.ctx, args[0])
			if err != nil {
				return wrapf(err, "describing namespace %s", args[0])
			}
			if s.out.json {
				return s.out.object(map[string]any{"name": ni.Name, "max_tables": ni.MaxTables, "description": ni.Description, "tables": ni.Tables})
			}
			limit := "none"
			if ni.MaxTables > 0 {
				limit = fmt.Sprint(ni.MaxTables)
			}
			_, err = fmt.Fprintf(s.out.w, "namespace %s\nmax tables: %s\ndescription: %s\ntables (%d): %s\n",
				ni.Name, limit, ni.Description, len(ni.Tables), strings.Join(ni.Tables, " "))
			return err
		},
	}
}

func newNamespaceDeleteCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "delete NAMESPACE [--recursive]",
		Short: "Delete an empty namespace; --recursive deletes its tables and their data first",
		Long: `Delete a namespace. A namespace that holds tables is refused unless
--recursive is given, which deletes every table of it (and its data; a table
with deletion protection stops it) and then the namespace. The default
namespace cannot be deleted.`,
		Example: "  tabula namespace delete scratch\n  tabula namespace delete scratch --recursive",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cell.ValidateNamespaceName(args[0]); err != nil {
				return err
			}
			recursive, _ := cmd.Flags().GetBool("recursive")
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			deleted, err := s.cli.Admin().DeleteNamespace(s.ctx, args[0], recursive)
			if err != nil {
				return wrapf(err, "deleting namespace %s (tables deleted: %d)", args[0], len(deleted))
			}
			return s.out.message(fmt.Sprintf("deleted namespace %s and %d table(s)", args[0], len(deleted)), "deleted", args[0])
		},
	}
	c.Flags().Bool("recursive", false, "delete the namespace's tables (and their data) with it")
	return c
}
