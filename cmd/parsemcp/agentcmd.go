package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/mcpserver"
)

func newAgent() *cobra.Command {
	var o federation.AgentOptions
	var entity string
	var demoTools, verbose bool
	var envs, envFiles []string
	cmd := &cobra.Command{
		Use:   "agent --broker URL --entity TYPE/ID [--demo | -- COMMAND ARGS…]",
		Short: "Serve tools to a parsemcp federation over MQTT: the demo agent's, or any stdio MCP server's (bridged)",
		Long: `agent joins a parsemcp server's federation as a remote agent: it connects to the
broker, announces itself on its presence topic, and answers the platform's
tools/list and tools/call requests on its own request/response topics.

With --demo it serves a demo thermostat's tools. With a command after "--"
it starts that command as an MCP server over stdio and serves its tools,
so any MCP server can join the federation, e.g.

  parsemcp agent --broker mqtt://127.0.0.1:18830 --entity mcp/everything -- npx -y @modelcontextprotocol/server-everything stdio

The bridged command starts with a clean environment: only ` + strings.Join(bridgeBaseEnv(), ", ") + `
from this one, plus what --env and --env-file pass (never
PARSEMCP_AGENT_PASSWORD), so a bridged server cannot show a caller the
agent's credentials or anything else its operator did not hand it.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := federation.ParseEntity(entity)
			if err != nil {
				return fmt.Errorf("--entity: %w", err)
			}
			e.Team = o.Entity.Team
			if err := e.Validate(); err != nil {
				return err
			}
			o.Entity = e
			o.Password = os.Getenv(agentSecretEnv)
			o.Logger = logger(levelOf(verbose))
			if o.Name == "" {
				o.Name = e.String()
			}
			ctx := cmd.Context()
			switch {
			case demoTools && len(args) > 0:
				return errors.New("--demo and a bridged command: choose one")
			case demoTools && len(envs)+len(envFiles) > 0:
				return errors.New("--env and --env-file pass variables to a bridged command; --demo runs none")
			case demoTools:
				return federation.ServeAgent(ctx, o, federation.DemoTools())
			case len(args) == 0:
				return errors.New("nothing to serve: pass --demo, or a stdio MCP server's command after --")
			}
			env, err := bridgeEnv(os.Environ(), envs, envFiles)
			if err != nil {
				return err
			}
			c := exec.Command(args[0], args[1:]...)
			c.Env = env
			c.Stderr = os.Stderr
			b, err := mcpserver.Bridge(ctx, c)
			if err != nil {
				return err
			}
			defer b.Close()
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			ended := make(chan struct{})
			go func() {
				_ = b.Wait()
				close(ended)
				cancel()
			}()
			err = federation.ServeAgent(ctx, o, b)
			select {
			case <-ended:
				if cmd.Context().Err() == nil {
					return fmt.Errorf("the bridged server %s exited", args[0])
				}
			default:
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Broker, "broker", os.Getenv("PARSEMCP_AGENT_BROKER"), "broker URL, mqtt://HOST:PORT (the embedded broker of serve --federation embedded listens on mqtt://127.0.0.1:18830); env PARSEMCP_AGENT_BROKER")
	fl.StringVar(&entity, "entity", "", "this agent's entity, TYPE/ID (e.g. device/thermostat-1): its tools appear as TYPE-ID__TOOL")
	fl.StringVar(&o.Entity.Team, "team", "", "the team this agent belongs to (team-scoped tokens reach only their team's agents)")
	fl.StringVar(&o.Platform, "platform", "parsemcp", "platform id of the server to join (its --federation-platform)")
	fl.StringVar(&o.Prefix, "prefix", federation.DefaultPrefix, "first level of the federation topics (the server's --federation-prefix)")
	fl.StringVar(&o.ClientID, "client-id", "", "MQTT client id (default: parsemcp-agent-TYPE-ID-…)")
	fl.StringVar(&o.Username, "username", os.Getenv("PARSEMCP_AGENT_USERNAME"), "MQTT user name (password: env PARSEMCP_AGENT_PASSWORD)")
	fl.StringVar(&o.Name, "name", "", "human-readable name announced with the agent's presence")
	fl.BoolVar(&demoTools, "demo", false, "serve the demo thermostat's tools")
	fl.StringArrayVar(&envs, "env", nil, "pass an environment variable to the bridged command: NAME copies this process's, NAME=VALUE sets it (repeatable; the command gets no other but the base: "+strings.Join(bridgeBaseEnv(), ", ")+")")
	fl.StringArrayVar(&envFiles, "env-file", nil, "pass the NAME=VALUE lines of a dotenv file to the bridged command (repeatable; --env wins)")
	fl.BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	_ = cmd.MarkFlagRequired("broker")
	_ = cmd.MarkFlagRequired("entity")
	return cmd
}
