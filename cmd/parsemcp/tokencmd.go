package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parsemcp/parsemcp/federation"
)

// tokenFlags select where tokens live: the store (--store, or --demo's
// cached database) or a file (--tokens FILE).
type tokenFlags struct {
	store  string
	demo   bool
	tokens string
}

func (f *tokenFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.store, "store", os.Getenv("PARSEMCP_STORE"), "store holding the tokens (as serve's --store); env PARSEMCP_STORE")
	fl.BoolVar(&f.demo, "demo", false, "the demo dataset's cached store (as serve --demo)")
	fl.StringVar(&f.tokens, "tokens", os.Getenv("PARSEMCP_TOKENS"), "\"store\" (default) or a token file path, as serve's --tokens; env PARSEMCP_TOKENS")
}

func (f *tokenFlags) open(cmd *cobra.Command) (federation.TokenStore, func(), error) {
	if f.tokens != "" && f.tokens != "store" {
		ts, err := federation.NewFileTokens(f.tokens)
		return ts, func() {}, err
	}
	sf := storeFlags{store: f.store, demo: f.demo, demoRows: 10000}
	log := logger(levelOf(false))
	st, err := sf.openStore(cmd.Context(), log)
	if err != nil {
		return nil, nil, err
	}
	ts, err := openTokens(cmd.Context(), "store", st)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return ts, func() { st.Close() }, nil
}

func newToken() *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Create, list and revoke personal access tokens (for serve --tokens)"}
	cmd.AddCommand(newTokenCreate(), newTokenList(), newTokenRevoke())
	return cmd
}

func newTokenCreate() *cobra.Command {
	var f tokenFlags
	var t federation.Token
	var expires string
	cmd := &cobra.Command{
		Use:   "create --name NAME [--scope read|write] [--team TEAM] [--user ID | --agent PROFILE] [--expires 90d]",
		Short: "Create a token and print it (once: only its hash is kept)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if t.User != "" && t.Agent != "" {
				return errors.New("--user and --agent: a token acts as one of them")
			}
			now := time.Now()
			if expires != "" {
				d, err := parseLifetime(expires)
				if err != nil {
					return fmt.Errorf("--expires: %w", err)
				}
				t.ExpiresAt = now.Add(d)
			}
			ts, closeFn, err := f.open(cmd)
			if err != nil {
				return err
			}
			defer closeFn()
			tok, bearer, err := federation.NewToken(t, now)
			if err != nil {
				return err
			}
			if err := ts.Add(cmd.Context(), tok); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "created token %s (%s, scope %s%s); it is shown once:\n", tok.ID, tok.Name, tok.Scope, teamNote(tok.Team))
			fmt.Println(bearer)
			return nil
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&t.Name, "name", "", "what the token is for")
	fl.StringVar(&t.Scope, "scope", federation.ScopeRead, "read (only tools annotated read-only, ours and remote agents') or write")
	fl.StringVar(&t.Team, "team", "", "confine the token to remote agents of this team")
	fl.StringVar(&t.User, "user", "", "act as this Parse _User objectId (ACLs apply; tier from serve's --permission)")
	fl.StringVar(&t.Agent, "agent", "", "act as this policy profile (serve --policy)")
	fl.StringVar(&expires, "expires", "", "lifetime, e.g. 90d, 12h (default: no expiry)")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}

func teamNote(team string) string {
	if team == "" {
		return ""
	}
	return ", team " + team
}

// parseLifetime reads a duration, also in days ("90d").
func parseLifetime(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days <= 0 {
			return 0, fmt.Errorf("%q: want N days (90d) or a duration (12h)", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: want N days (90d) or a duration (12h)", s)
	}
	return d, nil
}

func newTokenList() *cobra.Command {
	var f tokenFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, closeFn, err := f.open(cmd)
			if err != nil {
				return err
			}
			defer closeFn()
			list, err := ts.List(cmd.Context())
			if err != nil {
				return err
			}
			now := time.Now()
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tSCOPE\tTEAM\tACTS AS\tCREATED\tEXPIRES\tSTATUS")
			for _, t := range list {
				as := "server identity"
				switch {
				case t.Agent != "":
					as = "agent " + t.Agent
				case t.User != "":
					as = "user " + t.User
				}
				exp := "never"
				if !t.ExpiresAt.IsZero() {
					exp = t.ExpiresAt.Format(time.RFC3339)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Scope, dash(t.Team), as, t.CreatedAt.Format(time.RFC3339), exp, t.Status(now))
			}
			return w.Flush()
		},
	}
	f.register(cmd)
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newTokenRevoke() *cobra.Command {
	var f tokenFlags
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token (refused from the next request on)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, closeFn, err := f.open(cmd)
			if err != nil {
				return err
			}
			defer closeFn()
			if err := ts.Revoke(cmd.Context(), args[0], time.Now()); err != nil {
				if errors.Is(err, federation.ErrTokenNotFound) {
					return fmt.Errorf("token %s: %w", args[0], err)
				}
				return err
			}
			fmt.Fprintf(os.Stderr, "revoked token %s\n", args[0])
			return nil
		},
	}
	f.register(cmd)
	return cmd
}
