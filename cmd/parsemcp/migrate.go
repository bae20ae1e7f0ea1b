package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parsemcp/parsemcp/store/postgres"
)

// newMigrate is `parsemcp migrate`: the one command (with `demo`) that runs
// DDL. It creates the `_SCHEMA` table and the system classes where missing
// and installs the PostgreSQL change feed (docs/CHANGEFEED.md). Running it
// again changes nothing that is in place. Serving never runs DDL, so a
// read-only role can serve (docs/POSTGRES.md).
func newMigrate() *cobra.Command {
	var spec string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Set a store up (_SCHEMA, system classes, the PostgreSQL change feed); idempotent",
		Long: `Set a store up: create the _SCHEMA table and the system classes where
missing (a new SQLite file is created), and install the change feed in a
PostgreSQL store: the change log table
(` + postgres.ChangeTable + `), its trigger function, and a trigger on every class
table listed in _SCHEMA. With it, serve reports changes made by any client
(Parse Server, other servers, plain SQL), not only its own writes.

Run it again after another server (e.g. Parse Server) created classes: it adds
the missing triggers and leaves the rest as it is. A SQLite store needs no
change feed (it polls the database file).

serve, stdio and call never run DDL: a database that is not set up is an
error there, and a PostgreSQL role that may only read serves every read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if spec == "" {
				return fmt.Errorf("no store: pass --store postgres://USER@HOST:PORT/DB")
			}
			st, where, err := openSpec(cmd.Context(), spec, nil, 0, true)
			if err != nil {
				return err
			}
			defer st.Close()
			out := cmd.OutOrStdout()
			pg, ok := st.(*postgres.Store)
			if !ok {
				fmt.Fprintf(out, "%s: set up (_SCHEMA and the system classes); no change feed to install (the SQLite change feed polls the database file)\n", where)
				return nil
			}
			res, err := pg.InstallChangeFeed(cmd.Context())
			if err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			printInstall(out, where, res)
			return nil
		},
	}
	cmd.Flags().StringVar(&spec, "store", os.Getenv("PARSEMCP_STORE"), "store to migrate: postgres://USER@HOST:PORT/DB (a SQLite store needs nothing); env PARSEMCP_STORE")
	return cmd
}

// printInstall says what InstallChangeFeed did.
func printInstall(w io.Writer, where string, r postgres.FeedInstall) {
	fmt.Fprintf(w, "change feed in %s (schema %s):\n", where, r.Schema)
	if r.CreatedTable {
		fmt.Fprintf(w, "  created the change log table %s\n", r.Schema+"."+postgres.ChangeTable)
	} else {
		fmt.Fprintf(w, "  change log table %s already present\n", r.Schema+"."+postgres.ChangeTable)
	}
	fmt.Fprintf(w, "  trigger function %s\n", r.Function)
	list := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ", ")
	}
	fmt.Fprintf(w, "  triggers added to %d classes: %s\n", len(r.Attached), list(r.Attached))
	fmt.Fprintf(w, "  triggers already on %d classes: %s\n", len(r.Present), list(r.Present))
	if len(r.NoTable) > 0 {
		fmt.Fprintf(w, "  skipped %d classes listed in _SCHEMA without a table: %s\n", len(r.NoTable), list(r.NoTable))
	}
	if !r.CreatedTable && len(r.Attached) == 0 {
		fmt.Fprintln(w, "already up to date")
	} else {
		fmt.Fprintln(w, "done")
	}
}
