//go:build llm

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/parsemcp/parsemcp/llm"
)

// askOutput is ask's JSON output: the result, and the error when the
// question failed.
type askOutput struct {
	*llm.Result
	Error string `json:"error,omitempty"`
}

func newAsk() *cobra.Command {
	var l llmFlags
	var output string
	var trace, yes bool
	cmd := &cobra.Command{
		Use:   "ask QUESTION",
		Short: askShort,
		Long: `Ask a language model one question about the data. The model gets the
tools of a parsemcp server (this process's, or --server's, as the agent the
server gives this client) and calls them until it answers, at most
--max-iterations model turns. Text output prints the answer on stdout and
a usage line on stderr; --output json prints the whole result (answer, tool
calls with durations and error codes, tokens and estimated cost per turn).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, pos []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("--output %q: want text or json", output)
			}
			if err := l.resolve(cmd); err != nil {
				return err
			}
			if _, err := llm.NewProvider(l.cfg); err != nil { // fail before opening the store
				return err
			}
			ctx := cmd.Context()
			s, err := l.connect(ctx, terminalApproval(yes), nil)
			if err != nil {
				return err
			}
			defer s.close()
			out := &lineWriter{w: os.Stdout}
			errw := &lineWriter{w: os.Stderr}
			c, err := l.newClient(s, func(e llm.Event) {
				switch {
				case e.Kind == llm.EventText && output == "text":
					out.text(e.Text)
				case e.Kind == llm.EventToolStart:
					out.end() // each turn's text on its own line
				case e.Kind == llm.EventToolEnd && trace:
					errw.line(callLine(e.Call))
				case e.Kind == llm.EventTurn && trace:
					errw.line("  turn: " + e.Usage.String())
				case e.Kind == llm.EventToolsChanged && trace:
					errw.line(toolsChangedLine(e))
				}
			})
			if err != nil {
				return err
			}
			res, askErr := c.Ask(ctx, pos[0])
			if output == "json" {
				o := askOutput{Result: res}
				if askErr != nil {
					o.Error = askErr.Error()
				}
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(o); err != nil {
					return err
				}
				if askErr != nil {
					return &exitError{code: 1}
				}
			} else {
				if askErr != nil {
					out.end()
					return askErr
				}
				if !l.stream {
					out.text(res.Answer)
				}
				out.end()
				fmt.Fprintf(os.Stderr, "%d tool calls, %d model turns: %s\n", len(res.ToolCalls), len(res.Turns), res.Usage)
				if res.Reason != "" {
					fmt.Fprintln(os.Stderr, "stopped:", res.Reason)
				}
			}
			if res.Stop != llm.StopAnswered {
				return &exitError{code: 3}
			}
			return nil
		},
	}
	l.register(cmd, false, 0)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text (the answer) or json (the whole result)")
	cmd.Flags().BoolVar(&trace, "trace", false, "print each tool call and each model turn's usage on stderr")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "approve destructive changes the model asks for without asking (otherwise asked on the terminal; refused when there is none)")
	return cmd
}

var errQuit = errors.New("quit")
