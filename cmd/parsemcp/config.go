package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/parsemcp/parsemcp/internal/flagconfig"
)

// EnvPrefix starts the environment variable of every flag of the
// configurable commands: --max-inflight is PARSEMCP_MAX_INFLIGHT.
const EnvPrefix = "PARSEMCP_"

// EnvFile names the dotenv file read at start instead of ./.env, or
// "off" for none.
const EnvFile = "PARSEMCP_ENV_FILE"

// dotEnv is the dotenv file main read into the environment (nil: none).
var dotEnv *flagconfig.DotEnv

// loadDotEnv reads ./.env when there is one, or the file PARSEMCP_ENV_FILE
// names (which must exist), into the environment: a variable already set
// wins over the file's.
func loadDotEnv() (*flagconfig.DotEnv, error) {
	switch path := os.Getenv(EnvFile); path {
	case "":
		return flagconfig.LoadDotEnv(".env", false)
	case "off":
		return nil, nil
	default:
		return flagconfig.LoadDotEnv(path, true)
	}
}

// configurable lets every flag of cmd, present and future, be set by its
// PARSEMCP_<FLAG> variable (or the variables it declares: flagconfig.Env,
// flagconfig.Alias) and by a key of the --config YAML file: the command
// line wins over the environment, which wins over the file.
func configurable(cmd *cobra.Command) *cobra.Command {
	cmd.Flags().String("config", os.Getenv(EnvPrefix+"CONFIG"), "YAML file of flag values (key: the flag's name); a flag wins over its PARSEMCP_<FLAG> variable, which wins over the file; `parsemcp config` prints the result; env PARSEMCP_CONFIG")
	pre := cmd.PreRunE
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if _, err := applyConfig(cmd); err != nil {
			return err
		}
		if pre != nil {
			return pre(cmd, args)
		}
		return nil
	}
	return cmd
}

func applyConfig(cmd *cobra.Command) (flagconfig.Sources, error) {
	file, _ := cmd.Flags().GetString("config")
	return flagconfig.Apply(cmd.Flags(), flagconfig.Options{Prefix: EnvPrefix, File: file, Skip: []string{"config"}, DotEnv: dotEnv})
}

// applyEnv sets the flags of ask and chat from the variables their flags
// declare (flagconfig.Env, flagconfig.Alias) and no others: those
// commands have no --config file, and their --api-key is the model's.
func applyEnv(cmd *cobra.Command) (flagconfig.Sources, error) {
	return flagconfig.Apply(cmd.Flags(), flagconfig.Options{DotEnv: dotEnv})
}

// newConfig prints the configuration serve would run with, from the same
// flags, environment and file, secrets masked; its output is a --config file.
func newConfig() *cobra.Command {
	serve := configurable(newServe())
	cmd := &cobra.Command{
		Use:   "config [serve flags]",
		Short: "Print serve's effective configuration (flags > PARSEMCP_* environment > the reference guide's names > --config file > defaults), each value's source, secrets masked",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := applyConfig(cmd)
			if err != nil {
				return err
			}
			return flagconfig.Print(cmd.OutOrStdout(), cmd.Flags(), src, "config")
		},
	}
	cmd.Flags().AddFlagSet(serve.Flags())
	return cmd
}
