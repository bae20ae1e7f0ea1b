//go:build llm

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"

	"github.com/parsemcp/parsemcp/internal/flagconfig"
	"github.com/parsemcp/parsemcp/llm"
)

// DefaultChatCompactAt is chat's default context budget (tokens) before
// it compacts the conversation.
const DefaultChatCompactAt = 60000

// chatCommands are the slash commands of chat.
var chatCommands = []string{"/reset", "/compact", "/tools", "/trace", "/cost", "/history", "/exit", "/quit"}

func newChat() *cobra.Command {
	var l llmFlags
	var trace bool
	var historyFile string
	cmd := &cobra.Command{
		Use:   "chat",
		Short: chatShort,
		Long: `An interactive session with a language model that answers questions about
the data by calling the tools of a parsemcp server (this process's, or
--server's, as the agent the server gives this client). The model's text
streams as it is written; each tool call shows a line with its arguments,
duration and error code. The conversation carries over from question to
question and is compacted into a summary when its context reaches
--compact-at tokens. Line editing and history (--history-file) as in a
shell; Ctrl-C stops a running answer; an empty line, Ctrl-D or /exit ends
the session.

Commands: /reset (forget the conversation), /compact (summarise it now),
/tools (the tools the model may call), /trace (show tool results and
per-turn usage), /cost (tokens and estimated cost), /history, /exit.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := l.resolve(cmd); err != nil {
				return err
			}
			if _, err := llm.NewProvider(l.cfg); err != nil { // fail before opening the store
				return err
			}
			return runChat(cmd.Context(), &l, trace, historyFile)
		},
	}
	l.register(cmd, true, DefaultChatCompactAt)
	cmd.Flags().BoolVar(&trace, "trace", false, "start with the trace on (each tool call's result and each model turn's usage); env PARSEMCP_CHAT_TRACE=true (or MCP_CHAT_TRACE)")
	flagconfig.Env(cmd.Flags(), "trace", "PARSEMCP_CHAT_TRACE")
	flagconfig.Alias(cmd.Flags(), "trace", "MCP_CHAT_TRACE")
	cmd.Flags().StringVar(&historyFile, "history-file", defaultHistoryFile("chat_history"), "where the input history is kept (\"\" keeps none)")
	return cmd
}

// chat is one interactive session.
type chat struct {
	c      *llm.Client
	rl     *readline.Instance
	out    *lineWriter
	trace  bool
	stream bool
	where  string

	mu       sync.Mutex
	prompted bool // waiting at the prompt: a notice may be written above it
}

// atPrompt records whether the session waits at the prompt.
func (ch *chat) atPrompt(yes bool) {
	ch.mu.Lock()
	ch.prompted = yes
	ch.mu.Unlock()
}

// toolsChanged tells a person waiting at the prompt that the server's
// tools changed (any other time, the next model turn's line tells).
func (ch *chat) toolsChanged() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.prompted {
		fmt.Fprintln(ch.rl.Stdout(), "(the server's tools changed: the next question is offered the new list)")
	}
}

func runChat(parent context.Context, l *llmFlags, trace bool, historyFile string) error {
	var items []readline.PrefixCompleterInterface
	for _, c := range chatCommands {
		items = append(items, readline.PcItem(c))
	}
	rl, err := newLineEditor("> ", historyFile, readline.NewPrefixCompleter(items...), "/exit")
	if err != nil {
		return err
	}
	defer rl.Close()
	// Ctrl-C stops the running answer, not the session; SIGTERM ends it.
	ctx, stop := sessionContext(parent, rl)
	defer stop()
	ch := &chat{rl: rl, out: &lineWriter{w: os.Stdout}, trace: trace, stream: l.stream}
	approve := promptApproval(rl, "> ", ch.out.end)
	s, err := l.connect(ctx, approve, ch.toolsChanged)
	if err != nil {
		return err
	}
	defer s.close()
	ch.where = s.where
	if ch.c, err = l.newClient(s, ch.event); err != nil {
		return err
	}
	tools, err := ch.c.Tools(ctx)
	if err != nil {
		return err
	}
	p := ch.c.Provider()
	fmt.Fprintf(os.Stdout, "parsemcp chat: %s / %s at %s\n", p.Name(), p.Model(), p.Endpoint())
	fmt.Fprintf(os.Stdout, "server: %s | %d tools | trace: %s\n", s.where, len(tools), onOff(ch.trace))
	fmt.Fprintf(os.Stdout, "Type a question. Commands: %s\n", strings.Join(chatCommands[:7], " "))
	fmt.Fprintln(os.Stdout, strings.Repeat("=", 70))
	for {
		ch.atPrompt(true)
		line, err := rl.Readline()
		ch.atPrompt(false)
		if errors.Is(err, readline.ErrInterrupt) {
			continue // Ctrl-C at the prompt clears the line
		}
		if err != nil { // Ctrl-D, or the input ended
			fmt.Fprintln(os.Stdout, "bye")
			return nil
		}
		line = strings.TrimSpace(line)
		if line == "" { // an empty line ends the session, as Ctrl-D does
			fmt.Fprintln(os.Stdout, "bye")
			return nil
		}
		if strings.HasPrefix(line, "/") {
			if err := ch.command(ctx, line); errors.Is(err, errQuit) {
				fmt.Fprintln(os.Stdout, "bye")
				return nil
			} else if err != nil {
				ch.out.line("error: " + err.Error())
			}
			continue
		}
		ch.ask(ctx, line)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// ask runs one question; Ctrl-C stops it.
func (ch *chat) ask(parent context.Context, q string) {
	ctx, stop := untilInterrupt(parent)
	defer stop()
	res, err := ch.c.Ask(ctx, q)
	switch {
	case err != nil && ctx.Err() != nil && parent.Err() == nil:
		ch.out.line("\n(stopped)")
		return
	case err != nil:
		ch.out.line("error: " + err.Error())
		return
	}
	if !ch.stream {
		ch.out.text(res.Answer)
	}
	ch.out.end()
	if res.Reason != "" {
		ch.out.line("(stopped: " + res.Reason + ")")
	}
	fmt.Fprintln(ch.out.w)
}

func (ch *chat) event(e llm.Event) {
	switch e.Kind {
	case llm.EventText:
		ch.out.text(e.Text)
	case llm.EventToolEnd:
		ch.out.line(callLine(e.Call))
		if ch.trace {
			ch.out.line("     " + preview(e.Call.Result, 200))
		}
	case llm.EventTurn:
		if ch.trace {
			ch.out.line("  turn: " + e.Usage.String())
		}
	case llm.EventToolsChanged:
		ch.out.line(toolsChangedLine(e))
	case llm.EventCompacted:
		ch.out.line(fmt.Sprintf("(the conversation was compacted into a summary: %s)", e.Usage))
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// command runs a slash command.
func (ch *chat) command(ctx context.Context, line string) error {
	w := ch.out.w
	switch strings.Fields(line)[0] {
	case "/exit", "/quit":
		return errQuit
	case "/reset":
		ch.c.Reset()
		fmt.Fprintln(w, "The conversation is cleared.")
	case "/trace":
		ch.trace = !ch.trace
		fmt.Fprintln(w, "trace:", onOff(ch.trace))
	case "/tools":
		tools, err := ch.c.Tools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tools {
			desc, _, _ := strings.Cut(t.Description, ". ")
			fmt.Fprintf(w, "  %-22s %s\n", t.Name, preview(desc, 90))
		}
		fmt.Fprintf(w, "%d tools (%s)\n", len(tools), ch.where)
	case "/cost":
		fmt.Fprintln(w, "session:", ch.c.Usage())
		fmt.Fprintln(w, "last:   ", ch.c.LastUsage())
		if !ch.c.Priced() {
			fmt.Fprintf(w, "(no price for model %s, so no cost is shown; add one with --price %s=IN/OUT)\n", ch.c.Provider().Model(), ch.c.Provider().Model())
		}
	case "/history":
		h := ch.c.History()
		if len(h) == 0 {
			fmt.Fprintln(w, "(no conversation yet)")
		}
		for _, m := range h {
			fmt.Fprintln(w, historyLine(m))
		}
	case "/compact":
		before := ch.c.ContextTokens()
		summary, u, err := ch.c.Compact(ctx)
		if err != nil {
			return err
		}
		if summary == "" {
			fmt.Fprintln(w, "Nothing to compact yet.")
			return nil
		}
		fmt.Fprintf(w, "compacted: context %d -> about %d tokens (the summary cost %s)\n", before, ch.c.ContextTokens(), u)
		fmt.Fprintln(w, "summary:", preview(summary, 200))
	default:
		return fmt.Errorf("unknown command %s; the commands are %s", line, strings.Join(chatCommands, " "))
	}
	return nil
}

// historyLine is one turn of /history: its role and the first 120
// characters.
func historyLine(m llm.Message) string {
	text := m.Text
	if len(m.ToolCalls) > 0 {
		var names []string
		for _, c := range m.ToolCalls {
			names = append(names, c.Name)
		}
		text = strings.TrimSpace(text + " [calls " + strings.Join(names, ", ") + "]")
	}
	role := string(m.Role)
	if len(m.Results) > 0 {
		text = strings.TrimSpace(fmt.Sprintf("[%d tool results] %s", len(m.Results), text))
		if m.Text == "" {
			role = "tools"
		}
	}
	return fmt.Sprintf("%-10s %s", role+":", preview(text, 120))
}
