package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// defaultMaster is where `tabula dev` puts its master unless told otherwise.
const defaultMaster = "127.0.0.1:7100"

// usageError is a command line that could not be parsed.
type usageError struct {
	cmd string
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "tabula",
		Short: "Tabula: a Bigtable-style column-family store",
		Long: `Tabula is a Bigtable/HBase-style column-family store.

Start a whole cluster on this machine with "tabula dev", then in another shell:
  tabula table create users --family profile:versions=3 --splits m
  tabula put users alice profile:name=Alice
  tabula get users alice
  tabula scan users --prefix a
  tabula count users

Every setting can come from a flag, a TABULA_* environment variable
(TABULA_MASTER=host:port) or a YAML file given with --config.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       readBuildVersion().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	pf := root.PersistentFlags()
	pf.String("config", "", "YAML config file; its keys are flag names (see configs/)")
	pf.String("master", defaultMaster, "master address(es), comma-separated (env TABULA_MASTER)")
	pf.StringP("output", "o", "text", "output format where data is printed: text or json")
	pf.Duration("timeout", 30*time.Second, "deadline for the whole command (0: none; scan, count and bench have none unless set)")
	addTLSFlags(root)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{cmd: strings.TrimPrefix(c.CommandPath(), "tabula "), err: err}
	})
	root.AddCommand(
		newDevCmd(), newMasterCmd(), newTabletServerCmd(),
		newNamespaceCmd(), newTableCmd(), newFamilyCmd(), newServersCmd(),
		newPutCmd(), newAddCmd(), newGetCmd(), newScanCmd(), newDeleteCmd(), newCountCmd(),
		newIncrCmd(), newAppendCmd(), newCheckAndPutCmd(),
		newExportCmd(), newImportCmd(), newBulkloadCmd(),
		newBenchCmd(), newGatewayCmd(),
		newEtcdCmd(), newVerifyCmd(), newAuthCmd(), newHealthCmd(),
		newTopCmd(), newSnapshotCmd(),
		newBackupCmd(),
		newBalanceCmd(), newTabletCmd(), newBalancerCmd(),
		newQuotaCmd(),
		newVersionCmd(),
	)
	wrapArgs(root)
	return root
}

// wrapArgs makes argument-count errors usage errors (exit status 2).
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return &usageError{cmd: strings.TrimPrefix(cmd.CommandPath(), "tabula "), err: err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// settings returns the command's settings: flags > TABULA_* env > the
// --config file > defaults (the flags' defaults).
func settings(cmd *cobra.Command) (*viper.Viper, error) {
	v := viper.New()
	v.SetEnvPrefix("TABULA")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	var bindErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err := v.BindPFlag(f.Name, f); err != nil && bindErr == nil {
			bindErr = err
		}
	})
	if bindErr != nil {
		return nil, bindErr
	}
	if file := v.GetString("config"); file != "" {
		v.SetConfigFile(file)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("reading config file %s: %w", file, err)
		}
	}
	return v, nil
}

// stringList reads a list setting given as a YAML list or a
// comma-separated string (flag or env).
func stringList(v *viper.Viper, key string) []string {
	var out []string
	add := func(s string) {
		for p := range strings.SplitSeq(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	switch x := v.Get(key).(type) {
	case []any:
		for _, e := range x {
			add(fmt.Sprint(e))
		}
	case []string:
		for _, e := range x {
			add(e)
		}
	case nil:
	default:
		add(fmt.Sprint(x))
	}
	return out
}

// commandContext returns a context cancelled by SIGINT/SIGTERM and, when
// --timeout is positive, by the deadline.
func commandContext(cmd *cobra.Command, v *viper.Viper) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	if d := v.GetDuration("timeout"); d > 0 {
		tctx, cancel := context.WithTimeout(ctx, d)
		return tctx, func() { cancel(); stop() }
	}
	return ctx, stop
}
