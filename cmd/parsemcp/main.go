// Command parsemcp serves a Parse application's data to AI agents over the
// Model Context Protocol.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/parsemcp/parsemcp/internal/flagconfig"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if path := os.Getenv(HeapProfileEnv); path != "" {
		go profileHeapPeaks(ctx, path)
	}
	var err error
	if dotEnv, err = loadDotEnv(); err != nil {
		fmt.Fprintln(os.Stderr, "parsemcp:", err)
		os.Exit(1)
	}
	if err := newRoot().ExecuteContext(ctx); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		// An error may quote an address it could not parse, password
		// and all (a malformed --redis or --store URL).
		fmt.Fprintln(os.Stderr, "parsemcp:", redact(err.Error()))
		os.Exit(1)
	}
}

// exitError ends the command with a code and no further message.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "parsemcp",
		Short:         "Governed, live access to Parse application data over MCP",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(configurable(newServe()), configurable(newStdio()), newDemo(), configurable(newCall()), newVersion(), newAuditMetadata(), newMigrate(), newAgent(), newToken())
	root.AddCommand(newAsk(), newChat(), newConsole(), newConfig())
	maskHelpDefaults(root)
	return root
}

// maskHelpDefaults hides the secrets of every flag default in every
// command's --help: many defaults come from the environment
// (PARSEMCP_API_KEY, PARSEMCP_STORE, …), so help would print them. The
// rule is `parsemcp config`'s (flagconfig.MaskValue).
func maskHelpDefaults(cmd *cobra.Command) {
	mask := func(f *pflag.Flag) { f.DefValue = flagconfig.MaskValue(f, f.DefValue) }
	cmd.Flags().VisitAll(mask)
	cmd.PersistentFlags().VisitAll(mask)
	for _, c := range cmd.Commands() {
		maskHelpDefaults(c)
	}
}

func logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func levelOf(verbose bool) slog.Level {
	if verbose {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}
