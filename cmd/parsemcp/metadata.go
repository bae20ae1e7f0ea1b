package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/parsemcp/parsemcp/policy"
)

func newAuditMetadata() *cobra.Command {
	var f storeFlags
	var policyPath string
	var asJSON, failOnMissing, validate bool
	cmd := &cobra.Command{
		Use:   "audit-metadata",
		Short: "Report the classes and fields a policy file leaves undocumented",
		Long: `audit-metadata compares the class metadata of a policy file with the
store's schemas and reports classes without a description, fields without
a description (the agent_fields of a class that has them, otherwise all
its fields), names in agent_fields, join_fields, large_fields, fields or a
tenant scope that the class does not have, and the canonical filters
declared. System classes (_User, _Role, ...) and hidden classes are left
out.

With --demo and no --policy it audits the built-in demo policy against the
demo dataset.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			level := slog.LevelWarn
			if f.verbose {
				level = slog.LevelDebug
			}
			log := logger(level)
			var (
				pol  *policy.Policy
				name string
				err  error
			)
			switch {
			case policyPath != "":
				pol, err = policy.Load(policyPath, policy.Options{})
				name = policyPath
			case f.demo:
				pol, err = policy.Demo()
				name = "the demo policy"
			default:
				return fmt.Errorf("no policy: pass --policy FILE, or --demo for the built-in demo policy")
			}
			if err != nil {
				return fmt.Errorf("policy: %w", err)
			}
			st, err := f.openStore(ctx, log)
			if err != nil {
				return err
			}
			defer st.Close()
			r, err := policy.AuditMetadata(ctx, pol, st)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else if err := r.WriteText(out); err != nil {
				return err
			}
			var verr error
			if validate {
				verr = pol.Validate(ctx, st)
			}
			for _, w := range pol.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			if verr != nil {
				return fmt.Errorf("%s does not match the store:\n%w", name, verr)
			}
			if failOnMissing && r.HasGaps() {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&policyPath, "policy", os.Getenv("PARSEMCP_POLICY"), "policy file to audit (YAML); env PARSEMCP_POLICY; with --demo and no --policy, the built-in demo policy")
	fl.StringVar(&f.store, "store", os.Getenv("PARSEMCP_STORE"), "store to audit against: sqlite:PATH (or a .sqlite/.db path) or postgres://USER@HOST:PORT/DB; env PARSEMCP_STORE")
	fl.BoolVar(&f.demo, "demo", false, "use the demo dataset (created in a cached SQLite file when --store is not given)")
	fl.IntVar(&f.demoRows, "demo-rows", 10000, "size of the demo dataset created by --demo")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "debug logging")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.BoolVar(&failOnMissing, "fail-on-missing", false, "exit with status 1 when a description is missing or an entry does not resolve")
	fl.BoolVar(&validate, "validate", false, "also check the policy against the store's schemas (policy.Validate); a problem fails the command")
	return cmd
}
