//go:build llm

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/chzyer/readline"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/parsemcp/parsemcp/llm"
	"github.com/parsemcp/parsemcp/resources"
)

// consoleHelper is one command of the console's small language: its name,
// what follows it, and what it does.
type consoleHelper struct{ name, args, does string }

var consoleHelpers = []consoleHelper{
	{"tools", "", "the tools this agent may call, sorted, then how many"},
	{"schemas", "", "the classes this agent sees: custom, then built-in"},
	{"t", "TOOL [JSON]", `call TOOL with the JSON object as its arguments: t query_class {"class_name":"Ticket","limit":3}`},
	{"q", "CLASS [JSON]", `query_class on CLASS; the JSON object adds arguments: q Ticket {"where":{"status":"open"},"keys":"title"}`},
	{"count", "CLASS [JSON]", "count_objects on CLASS; the JSON object is the where constraint"},
	{"schema", "CLASS", "get_schema of CLASS"},
	{"dispatch", "METHOD [JSON]", "send one raw MCP JSON-RPC request in this session, the JSON as its params: dispatch tools/list"},
	{"prompts", "", "the prompts, sorted, then how many"},
	{"render_prompt", "NAME [JSON]", "prompts/get: the prompt's messages; the JSON object holds its arguments"},
	{"ask", "QUESTION", "a new conversation with the language model, which answers by calling the tools (needs --model …)"},
	{"reply", "TEXT", "go on with the last ask's conversation"},
	{"help", "", "this list"},
	{"exit", "", "end the console (also quit, Ctrl-D)"},
}

// dispatchMethods are the MCP methods Tab offers after dispatch.
var dispatchMethods = []string{"initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get",
	"resources/list", "resources/templates/list", "resources/read", "completion/complete", "logging/setLevel"}

func newConsole() *cobra.Command {
	var l llmFlags
	var historyFile string
	cmd := &cobra.Command{
		Use:   "console",
		Short: consoleShort,
		Long: `An interactive console for trying tools, queries and prompts by hand. It
serves the store in this process (--store or --demo, as call does; or a
server over stdio with --server-command) and talks to it through one MCP
session, as the agent the store flags or the policy give it (read-only by
default): every helper goes through the server's pipeline like any
client's call.

Helpers (JSON is one JSON object, the rest of the line):
` + helperTable() + `
Results print as indented JSON; a failed tool call prints its error_code
and message. Tab completes the helpers, tool names after t, class names
after q, count and schema, prompt names after render_prompt. Input history
is kept in --history-file; Up recalls it. Ctrl-C stops a running request.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := l.resolve(cmd); err != nil {
				return err
			}
			switch {
			case l.defaultServer:
				return fmt.Errorf("no store: pass --store sqlite:PATH or --demo, or --server-command to talk to a server over stdio")
			case l.server != "":
				return fmt.Errorf("--server (or %s): the console serves the store in this process (--store, --demo) or talks over stdio (--server-command); its dispatch cannot share an HTTP session", EnvServer)
			}
			model := l.cfg.Provider != "" || l.cfg.Model != "" || l.cfg.BaseURL != ""
			if model {
				if _, err := llm.NewProvider(l.cfg); err != nil { // fail before opening the store
					return err
				}
			}
			return runConsole(cmd.Context(), &l, model, historyFile)
		},
	}
	l.register(cmd, true, DefaultChatCompactAt)
	for _, name := range []string{"server", "server-key"} {
		_ = cmd.Flags().MarkHidden(name)
	}
	cmd.Flags().StringVar(&historyFile, "history-file", defaultHistoryFile("console_history"), "where the input history is kept (\"\" keeps none)")
	return cmd
}

// console is one interactive console session.
type console struct {
	ctx  context.Context // the session's: completion's requests
	cs   *mcp.ClientSession
	raw  *rawRPC
	w    io.Writer
	chat *chat // ask and reply; nil without a model
	// asked: an ask began the model's conversation, which reply goes on.
	asked bool
}

func runConsole(parent context.Context, l *llmFlags, model bool, historyFile string) error {
	c := &console{raw: &rawRPC{}, w: os.Stdout}
	rl, err := newLineEditor("parsemcp> ", historyFile, consoleCompleter{c}, "exit")
	if err != nil {
		return err
	}
	defer rl.Close()
	ctx, stop := sessionContext(parent, rl)
	defer stop()
	c.ctx = ctx
	out := &lineWriter{w: c.w}
	l.wrap = c.raw.wrap
	s, err := l.connect(ctx, promptApproval(rl, "parsemcp> ", out.end), nil)
	if err != nil {
		return err
	}
	defer s.close()
	c.cs = s.cs
	if model {
		c.chat = &chat{rl: rl, out: out, stream: l.stream, where: s.where}
		if c.chat.c, err = l.newClient(s, c.chat.event); err != nil {
			return err
		}
	}
	names, err := c.toolNames(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.w, "parsemcp console: %s | %d tools\n", s.where, len(names))
	if c.chat != nil {
		p := c.chat.c.Provider()
		fmt.Fprintf(c.w, "model: %s / %s at %s (ask, reply)\n", p.Name(), p.Model(), p.Endpoint())
	} else {
		fmt.Fprintln(c.w, "no model: ask and reply need --model (and --base-url for a local server)")
	}
	fmt.Fprintln(c.w, "Type help for the helpers. Tab completes, Up recalls, Ctrl-D or exit ends.")
	for {
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			continue // Ctrl-C at the prompt clears the line
		}
		if err != nil { // Ctrl-D, the input ended, or SIGTERM
			fmt.Fprintln(c.w, "bye")
			return nil
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		rctx, stop := untilInterrupt(ctx)
		err = c.run(rctx, line)
		stopped := rctx.Err() != nil && ctx.Err() == nil
		stop()
		switch {
		case errors.Is(err, errQuit):
			fmt.Fprintln(c.w, "bye")
			return nil
		case err != nil && stopped:
			fmt.Fprintln(c.w, "(stopped)")
		case err != nil:
			fmt.Fprintln(c.w, "error: "+oneLine(err.Error()))
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// run runs one line of input.
func (c *console) run(ctx context.Context, line string) error {
	name, rest := cutWord(line)
	if h := helper(name); (name == "quit" || h != nil && h.args == "") && rest != "" {
		return fmt.Errorf("%s takes nothing after it", name)
	}
	switch name {
	case "exit", "quit":
		return errQuit
	case "help":
		c.help()
		return nil
	case "tools":
		return c.list(ctx, c.toolNames, "tools")
	case "schemas":
		return c.schemas(ctx)
	case "prompts":
		return c.list(ctx, c.promptNames, "prompts")
	case "ask", "reply":
		return c.ask(ctx, name, rest)
	}
	word, arg := cutWord(rest)
	if word == "" {
		if h := helper(name); h != nil {
			return fmt.Errorf("%s needs %s", name, h.args)
		}
		return fmt.Errorf("unknown helper %q; help lists them", name)
	}
	switch name {
	case "t":
		args, err := jsonObject(arg)
		if err != nil {
			return err
		}
		return c.tool(ctx, word, args)
	case "q", "count":
		opts, err := jsonObject(arg)
		if err != nil {
			return err
		}
		if name == "count" {
			args := map[string]any{"class_name": word}
			if opts != nil {
				args["where"] = opts
			}
			return c.tool(ctx, "count_objects", args)
		}
		if opts == nil {
			opts = map[string]any{}
		}
		opts["class_name"] = word
		return c.tool(ctx, "query_class", opts)
	case "schema":
		if arg != "" {
			return fmt.Errorf("schema takes one class name")
		}
		return c.tool(ctx, "get_schema", map[string]any{"class_name": word})
	case "dispatch":
		return c.dispatch(ctx, word, arg)
	case "render_prompt":
		return c.renderPrompt(ctx, word, arg)
	}
	return fmt.Errorf("unknown helper %q; help lists them", name)
}

func helper(name string) *consoleHelper {
	for i := range consoleHelpers {
		if consoleHelpers[i].name == name {
			return &consoleHelpers[i]
		}
	}
	return nil
}

func (c *console) help() { io.WriteString(c.w, helperTable()) }

// helperTable lists the helpers, one a line.
func helperTable() string {
	var b strings.Builder
	for _, h := range consoleHelpers {
		fmt.Fprintf(&b, "  %-26s %s\n", strings.TrimSpace(h.name+" "+h.args), h.does)
	}
	return b.String()
}

// list prints the names of a listing, one a line, then how many.
func (c *console) list(ctx context.Context, listing func(context.Context) ([]string, error), what string) error {
	names, err := listing(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		fmt.Fprintln(c.w, n)
	}
	fmt.Fprintf(c.w, "%d %s\n", len(names), what)
	return nil
}

// toolNames are the tools the agent may call (tools/list), sorted.
func (c *console) toolNames(ctx context.Context) ([]string, error) {
	return sortedNames(c.cs.Tools(ctx, nil), func(t *mcp.Tool) string { return t.Name })
}

// promptNames are the server's prompts (prompts/list), sorted.
func (c *console) promptNames(ctx context.Context) ([]string, error) {
	return sortedNames(c.cs.Prompts(ctx, nil), func(p *mcp.Prompt) string { return p.Name })
}

// sortedNames are the names of a listing's items, sorted.
func sortedNames[T any](items iter.Seq2[T, error], name func(T) string) ([]string, error) {
	var names []string
	for it, err := range items {
		if err != nil {
			return nil, err
		}
		names = append(names, name(it))
	}
	slices.Sort(names)
	return names, nil
}

// classNames are the visible classes starting with prefix, as the
// server completes the {class_name} of its resource templates.
func (c *console) classNames(ctx context.Context, prefix string) ([]string, error) {
	res, err := c.cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: resources.Scheme + "{" + resources.TemplateVar + "}/schema"},
		Argument: mcp.CompleteParamsArgument{Name: resources.TemplateVar, Value: prefix},
	})
	if err != nil {
		return nil, err
	}
	return res.Completion.Values, nil
}

// schemas prints the visible classes, from get_all_schemas.
func (c *console) schemas(ctx context.Context) error {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_all_schemas", Arguments: map[string]any{}})
	if err != nil {
		return err
	}
	if res.IsError {
		c.printResult(res)
		return nil
	}
	var all struct {
		Custom  []struct{ Name string } `json:"custom"`
		BuiltIn []struct{ Name string } `json:"built_in"`
	}
	if err := json.Unmarshal([]byte(resultText(res)), &all); err != nil {
		return fmt.Errorf("get_all_schemas: %w", err)
	}
	var custom, builtIn []string
	for _, s := range all.Custom {
		custom = append(custom, s.Name)
	}
	for _, s := range all.BuiltIn {
		builtIn = append(builtIn, s.Name)
	}
	fmt.Fprintf(c.w, "custom:   %s\n", strings.Join(custom, ", "))
	fmt.Fprintf(c.w, "built-in: %s\n", strings.Join(builtIn, ", "))
	fmt.Fprintf(c.w, "%d classes\n", len(custom)+len(builtIn))
	return nil
}

// tool calls a tool and prints its result.
func (c *console) tool(ctx context.Context, name string, args map[string]any) error {
	if args == nil {
		args = map[string]any{}
	}
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err
	}
	c.printResult(res)
	return nil
}

// printResult prints a tool result: its JSON indented, or for a failure
// its error_code and message (and details).
func (c *console) printResult(res *mcp.CallToolResult) {
	text := resultText(res)
	if res.IsError {
		var e struct {
			Code    string          `json:"error_code"`
			Message string          `json:"error"`
			Details json.RawMessage `json:"details"`
		}
		if json.Unmarshal([]byte(text), &e) != nil || e.Code == "" {
			fmt.Fprintln(c.w, "error: "+oneLine(text))
			return
		}
		fmt.Fprintf(c.w, "error: %s: %s\n", e.Code, e.Message)
		if len(e.Details) > 0 {
			fmt.Fprintf(c.w, "details: %s\n", e.Details)
		}
		return
	}
	c.printJSON([]byte(text))
}

// resultText is a tool result's text (parsemcp's tools answer one JSON
// text).
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// printJSON prints raw indented, or as it is when it is not JSON.
func (c *console) printJSON(raw []byte) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		fmt.Fprintf(c.w, "%s\n", raw)
		return
	}
	enc := json.NewEncoder(c.w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// dispatch sends one raw JSON-RPC request in the session and prints the
// result or the error.
func (c *console) dispatch(ctx context.Context, method, params string) error {
	var raw json.RawMessage
	if params != "" {
		if !json.Valid([]byte(params)) {
			return fmt.Errorf("invalid JSON %s", preview(params, 60))
		}
		raw = json.RawMessage(params)
	}
	res, err := c.raw.call(ctx, method, raw)
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &werr):
		if werr.Code != 0 {
			fmt.Fprintf(c.w, "error: %d %s\n", werr.Code, werr.Message)
		} else {
			fmt.Fprintf(c.w, "error: %s\n", werr.Message)
		}
		if len(werr.Data) > 0 {
			fmt.Fprintf(c.w, "data: %s\n", werr.Data)
		}
		if method == "initialize" {
			// The session is initialized once; show what it was told.
			fmt.Fprintln(c.w, "(the session is initialized already; the server answered its initialize with:)")
			b, err := json.Marshal(c.cs.InitializeResult())
			if err != nil {
				return err
			}
			c.printJSON(b)
		}
		return nil
	case err != nil:
		return err
	case res == nil && isNotification(method):
		fmt.Fprintln(c.w, "(notification sent)")
		return nil
	}
	c.printJSON(res)
	return nil
}

// renderPrompt prints prompts/get's result.
func (c *console) renderPrompt(ctx context.Context, name, arg string) error {
	obj, err := jsonObject(arg)
	if err != nil {
		return err
	}
	args := map[string]string{}
	for k, v := range obj {
		if s, ok := v.(string); ok {
			args[k] = s
			continue
		}
		b, _ := json.Marshal(v)
		args[k] = string(b) // prompt arguments are strings
	}
	res, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	c.printJSON(b)
	return nil
}

// ask puts a question to the model (ask: in a new conversation; reply: in
// the last ask's).
func (c *console) ask(ctx context.Context, name, text string) error {
	switch {
	case c.chat == nil:
		return fmt.Errorf("%s needs a language model: start the console with --model (and --base-url for a local server; --provider, --api-key …)", name)
	case text == "":
		return fmt.Errorf("%s needs %s", name, helper(name).args)
	case name == "reply" && !c.asked:
		return fmt.Errorf("nothing to reply to: ask a question first")
	case name == "ask":
		c.chat.c.Reset()
	}
	c.asked = true
	c.chat.ask(ctx, text)
	return nil
}

// cutWord splits s at its first run of blanks.
func cutWord(s string) (word, rest string) {
	s = strings.TrimSpace(s)
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// jsonObject parses s ("": none) as one JSON object.
func jsonObject(s string) (map[string]any, error) {
	if s == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	err := dec.Decode(&m)
	if err == nil && dec.More() {
		err = errors.New("more after the object")
	}
	if err == nil && m == nil {
		err = errors.New("null")
	}
	if err != nil {
		return nil, fmt.Errorf("invalid JSON %s: %v; want one object, e.g. {\"limit\":3}", preview(s, 60), err)
	}
	return m, nil
}

// oneLine is s on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// consoleCompleter completes the helper names, and after a helper what
// it takes: tool, class and prompt names as the server lists them to
// this agent, and MCP methods.
type consoleCompleter struct{ c *console }

// completionTimeout bounds the request Tab makes.
const completionTimeout = 3 * time.Second

func (cc consoleCompleter) Do(line []rune, pos int) ([][]rune, int) {
	text := string(line[:pos])
	start := strings.LastIndexAny(text, " \t") + 1
	word := text[start:]
	before := strings.Fields(text[:start])
	var names []string
	switch {
	case len(before) == 0:
		for _, h := range consoleHelpers {
			names = append(names, h.name)
		}
		names = append(names, "quit")
	case len(before) == 1:
		ctx, cancel := context.WithTimeout(cc.c.ctx, completionTimeout)
		defer cancel()
		switch before[0] {
		case "t":
			names, _ = cc.c.toolNames(ctx)
		case "q", "count", "schema":
			names, _ = cc.c.classNames(ctx, word)
		case "render_prompt":
			names, _ = cc.c.promptNames(ctx)
		case "dispatch":
			names = dispatchMethods
		}
	}
	var out [][]rune
	for _, n := range names {
		if strings.HasPrefix(n, word) {
			out = append(out, []rune(n[len(word):]+" "))
		}
	}
	return out, len([]rune(word))
}
