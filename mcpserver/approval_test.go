package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/tools"
)

// approvalEndpoint serves a write-enabled admin (master key) over
// Streamable HTTP with the given server options; the catalog declares the
// destructive method Ticket.purge.
func approvalEndpoint(t *testing.T, opts mcpserver.Options) (string, store.Store) {
	t.Helper()
	_, url, st := approvalServer(t, opts)
	return url, st
}

// approvalServer is approvalEndpoint with its server.
func approvalServer(t *testing.T, opts mcpserver.Options) (*mcpserver.Server, string, store.Store) {
	t.Helper()
	st := fixtureStore(t)
	cfg := tools.DefaultConfig
	cfg.Gates = allGates
	cat := ticketCatalog(t)
	mk := func() *agent.Agent { return policyAgent(agent.Admin, master, agent.Policy{Catalog: cat})() }
	opts.Store, opts.ToolConfig = st, &cfg
	opts.Agents = func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) { return mk(), nil }
	srv, err := mcpserver.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, mount(t, mcpserver.HandlerOptions{Server: srv, Agent: func(*http.Request) (*agent.Agent, error) { return mk(), nil }}), st
}

// httpClient connects the official Go SDK client at version; elicit is
// its elicitation handler (nil: the client does not support elicitation).
func httpClient(t *testing.T, url, version string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	var opts *mcp.ClientOptions
	if elicit != nil {
		opts = &mcp.ClientOptions{ElicitationHandler: elicit}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "approval", Version: "1"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &bearerTransport{token: "t"}}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %s: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func exists(t *testing.T, st store.Store, class, id string) bool {
	t.Helper()
	rows, err := st.Find(context.Background(), &query.Query{ReadACL: query.NoACLFilter, Class: class, Where: query.Cmp{Path: query.Path{Field: "objectId", Type: parse.TypeString}, Op: query.OpEq, Value: id}, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	return len(rows) == 1
}

// asked records the elicitation requests a client received and answers
// them with answer, after checking that nothing was written yet.
type asked struct {
	mu         sync.Mutex
	messages   []string
	stillThere []bool
}

func (a *asked) handler(t *testing.T, st store.Store, class, id string, answer func(ctx context.Context) (*mcp.ElicitResult, error)) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		a.mu.Lock()
		a.messages = append(a.messages, req.Params.Message)
		a.stillThere = append(a.stillThere, class == "" || exists(t, st, class, id))
		a.mu.Unlock()
		return answer(ctx)
	}
}

func (a *asked) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.messages)
}

func accept(approve bool) func(context.Context) (*mcp.ElicitResult, error) {
	return func(context.Context) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": approve}}, nil
	}
}

func action(a string) func(context.Context) (*mcp.ElicitResult, error) {
	return func(context.Context) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: a}, nil }
}

// toolResult runs a tool and decodes its JSON text.
func toolResult(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return decodeResult(t, res)
}

// decodeResult decodes a tool result's JSON text.
func decodeResult(t *testing.T, res *mcp.CallToolResult) (map[string]any, bool) {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
		t.Fatal(err)
	}
	return out, res.IsError
}

// Destructive operations ask a person through elicitation at every
// protocol version that has it (a server-to-client request for the older
// ones, an input-required round trip for 2026-07-28): accept runs the
// change, anything else refuses it, and nothing is written before the
// answer.
func TestApprovalOfDestructiveOperations(t *testing.T) {
	for _, version := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			url, st := approvalEndpoint(t, mcpserver.Options{})
			for _, tc := range []struct {
				name     string
				answer   func(context.Context) (*mcp.ElicitResult, error)
				approved bool
				kind     string
			}{
				{"accept", accept(true), true, ""},
				{"accept_no", accept(false), false, "declined"},
				{"decline", action("decline"), false, "declined"},
				{"cancel", action("cancel"), false, "cancelled"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					for _, op := range []struct {
						tool string
						args func(id string) map[string]any
						want string
					}{
						{"delete_object", func(id string) map[string]any { return map[string]any{"class_name": "Ticket", "object_id": id} },
							"Permanently delete the Ticket object %s (with its relation links). This cannot be undone. Approve?"},
						{"call_method", func(id string) map[string]any {
							return map[string]any{"class_name": "Ticket", "method_name": "purge", "object_id": id}
						}, "Run the destructive method Ticket.purge on Ticket %s (Delete the ticket for good). Approve?"},
					} {
						id := newTicket(t, st)
						var a asked
						cs := httpClient(t, url, version, a.handler(t, st, "Ticket", id, tc.answer))
						out, isErr := toolResult(t, cs, op.tool, op.args(id))
						if a.count() != 1 || !a.stillThere[0] {
							t.Fatalf("%s: asked %d times, object there when asked: %v", op.tool, a.count(), a.stillThere)
						}
						if want := strings.ReplaceAll(op.want, "%s", id); a.messages[0] != want {
							t.Errorf("%s: message %q, want %q", op.tool, a.messages[0], want)
						}
						if tc.approved {
							if isErr || exists(t, st, "Ticket", id) {
								t.Fatalf("%s approved: %v, still there: %v", op.tool, out, exists(t, st, "Ticket", id))
							}
							continue
						}
						if !isErr || out["error_code"] != "approval_denied" || out["details"].(map[string]any)["kind"] != tc.kind {
							t.Fatalf("%s refused: %v", op.tool, out)
						}
						if !strings.HasSuffix(out["error"].(string), "; nothing was changed") {
							t.Errorf("refusal message %q", out["error"])
						}
						if !exists(t, st, "Ticket", id) {
							t.Fatalf("%s: refused but the object is gone", op.tool)
						}
					}
				})
			}

			t.Run("delete_class", func(t *testing.T) {
				var a asked
				decline := httpClient(t, url, version, a.handler(t, st, "", "", action("decline")))
				ok(t, decline, "create_class", map[string]any{"class_name": "Scratch", "fields": map[string]any{"n": map[string]any{"type": "Number"}}})
				out, isErr := toolResult(t, decline, "delete_class", map[string]any{"class_name": "Scratch"})
				if !isErr || out["error_code"] != "approval_denied" {
					t.Fatalf("declined delete_class: %v", out)
				}
				if _, err := st.Schema(context.Background(), "Scratch"); err != nil {
					t.Fatalf("declined delete_class dropped the class: %v", err)
				}
				if a.messages[0] != "Permanently delete the class Scratch (5 fields): its table and schema are dropped. This cannot be undone. Approve?" {
					t.Errorf("delete_class message %q", a.messages[0])
				}
				var b asked
				yes := httpClient(t, url, version, b.handler(t, st, "", "", accept(true)))
				if out := ok(t, yes, "delete_class", map[string]any{"class_name": "Scratch"}); out["deleted"] != true {
					t.Fatalf("approved delete_class: %v", out)
				}
				// A dry run, and a refusal found before asking, ask nobody.
				ok(t, yes, "delete_object", map[string]any{"class_name": "Ticket", "object_id": newTicket(t, st), "dry_run": true})
				fails(t, yes, "delete_object", map[string]any{"class_name": "Ticket", "object_id": "zzzzzzzzzz"}, "not_found")
				fails(t, yes, "delete_class", map[string]any{"class_name": "Ticket"}, "invalid_argument") // not empty
				if b.count() != 1 {
					t.Fatalf("asked %d times, want 1 (only the real deletion)", b.count())
				}
			})

			t.Run("no_elicitation", func(t *testing.T) {
				id := newTicket(t, st)
				cs := httpClient(t, url, version, nil)
				out, isErr := toolResult(t, cs, "delete_object", map[string]any{"class_name": "Ticket", "object_id": id})
				if !isErr || out["error_code"] != "approval_denied" || out["details"].(map[string]any)["kind"] != "unsupported" {
					t.Fatalf("client without elicitation: %v", out)
				}
				if !exists(t, st, "Ticket", id) {
					t.Fatal("deleted without approval")
				}
				// Non-destructive writes need no approval.
				ok(t, cs, "update_object", map[string]any{"class_name": "Ticket", "object_id": id, "object": map[string]any{"title": "kept"}})
			})
		})
	}
}

// No answer within approval_timeout refuses the change (the person may
// answer later; it no longer counts). The timeout runs on a fake clock,
// moved past it while the person is being asked; the late answer comes
// after that (for the older versions once the call has ended, so it
// cannot overtake the expiry; for 2026-07-28 it is the retry that carries
// the too-old state).
func TestApprovalTimeout(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			const timeout = time.Minute
			clock := clockwork.NewFakeClockAt(time.Now())
			url, st := approvalEndpoint(t, mcpserver.Options{ApprovalTimeout: timeout, Clock: clock,
				Timeouts: map[string]time.Duration{"delete_object": time.Hour}}) // the tool's own limit plays no part
			id := newTicket(t, st)
			asking, late := make(chan struct{}), make(chan struct{})
			var lateOnce sync.Once
			answerLate := func() { lateOnce.Do(func() { close(late) }) }
			defer answerLate()
			person := func(context.Context) (*mcp.ElicitResult, error) {
				close(asking)
				<-late
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
			}
			var a asked
			cs := httpClient(t, url, version, a.handler(t, st, "Ticket", id, person))
			done := callAsync(cs, "delete_object", map[string]any{"class_name": "Ticket", "object_id": id})
			waitClosed(t, asking, "the person was never asked")
			clock.Advance(timeout + time.Millisecond)
			if version >= "2026-07-28" {
				answerLate() // the retry carries a state one minute and a millisecond old
			}
			out, isErr := callResult(t, done)
			if !isErr || out["error_code"] != "approval_denied" || out["details"].(map[string]any)["kind"] != "timeout" {
				t.Fatalf("late answer: %v", out)
			}
			if !exists(t, st, "Ticket", id) {
				t.Fatal("deleted after a late approval")
			}
		})
	}
}

// The time a person takes does not count against the tool's own limit:
// with the limits on a fake clock, the person answers after 1.5 times
// the tool's limit has passed, and the delete runs (on a fresh limit).
func TestApprovalWaitOutsideToolTimeout(t *testing.T) {
	const limit = time.Minute
	clock := clockwork.NewFakeClockAt(time.Now())
	url, st := approvalEndpoint(t, mcpserver.Options{Clock: clock, Timeouts: map[string]time.Duration{"delete_object": limit}})
	id := newTicket(t, st)
	asking, answer := make(chan struct{}), make(chan struct{})
	var answerOnce sync.Once
	answerNow := func() { answerOnce.Do(func() { close(answer) }) }
	defer answerNow()
	person := func(ctx context.Context) (*mcp.ElicitResult, error) {
		close(asking)
		select {
		case <-answer:
		case <-ctx.Done(): // the server gave up asking
			return nil, ctx.Err()
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}
	var a asked
	cs := httpClient(t, url, "2025-11-25", a.handler(t, st, "Ticket", id, person))
	done := callAsync(cs, "delete_object", map[string]any{"class_name": "Ticket", "object_id": id})
	waitClosed(t, asking, "the person was never asked")
	clock.Advance(limit * 3 / 2)
	answerNow()
	if out, isErr := callResult(t, done); isErr {
		t.Fatalf("approved after 1.5 times the tool's limit: %v", out)
	}
	if exists(t, st, "Ticket", id) {
		t.Fatal("not deleted")
	}
}

// called is the outcome of a tool call run by callAsync.
type called struct {
	res *mcp.CallToolResult
	err error
}

// callAsync runs a tool call in its own goroutine (the test moves a fake
// clock while it waits).
func callAsync(cs *mcp.ClientSession, name string, args map[string]any) <-chan called {
	done := make(chan called, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		done <- called{res, err}
	}()
	return done
}

// callResult waits for a callAsync call and decodes its JSON text.
func callResult(t *testing.T, done <-chan called) (map[string]any, bool) {
	t.Helper()
	var c called
	select {
	case c = <-done:
	case <-time.After(30 * time.Second): // bounds a hang
		t.Fatal("the call never returned")
	}
	if c.err != nil {
		t.Fatalf("protocol error: %v", c.err)
	}
	return decodeResult(t, c.res)
}

// waitClosed waits until ch is closed; the bound only ends a hang.
func waitClosed(t *testing.T, ch <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal(msg)
	}
}

// A 2026-07-28 answer must come back with the state the server signed
// for this very call: a forged state, or a state replayed for another
// object, is refused and nothing is written.
func TestApprovalStateIsBound(t *testing.T) {
	url, st := approvalEndpoint(t, mcpserver.Options{})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "forger", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: approveAll, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &bearerTransport{token: "t"}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	first, second := newTicket(t, st), newTicket(t, st)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_object", Arguments: map[string]any{"class_name": "Ticket", "object_id": first}})
	if err != nil || !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("first round: %v %+v", err, res)
	}
	ir, ok := res.InputRequests["parsemcp_approval"].(*mcp.ElicitParams)
	if !ok || !strings.Contains(ir.Message, first) {
		t.Fatalf("input request: %+v", res.InputRequests)
	}
	yes := mcp.InputResponseMap{"parsemcp_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
	// The genuine state's body (who, which call, when) with another
	// signature: everything but the signature matches.
	body, _, _ := strings.Cut(res.RequestState, ".")
	for name, tc := range map[string]struct {
		id, state string
	}{
		"replayed for another object": {second, res.RequestState},
		"forged":                      {first, "eyJ0IjoxfQ.AAAA"},
		"tampered":                    {first, "x" + res.RequestState},
		"signed by someone else":      {first, body + ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		"missing":                     {first, ""},
	} {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_object", Arguments: map[string]any{"class_name": "Ticket", "object_id": tc.id}, InputResponses: yes, RequestState: tc.state})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tc.state == "" {
			if !r.NeedsInput() {
				t.Errorf("%s: want a new input request, got %+v", name, r)
			}
			continue
		}
		if !r.IsError || !strings.Contains(r.Content[0].(*mcp.TextContent).Text, `"kind":"invalid_state"`) {
			t.Errorf("%s: %+v", name, r.Content)
		}
	}
	if !exists(t, st, "Ticket", first) || !exists(t, st, "Ticket", second) {
		t.Fatal("a forged approval deleted something")
	}
	// The genuine answer goes through.
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_object", Arguments: map[string]any{"class_name": "Ticket", "object_id": first}, InputResponses: yes, RequestState: res.RequestState})
	if err != nil || r.IsError || exists(t, st, "Ticket", first) {
		t.Fatalf("genuine answer: %v %+v", err, r)
	}
}

// DisableApproval is the operator's switch for unattended pipelines.
func TestApprovalDisabled(t *testing.T) {
	url, st := approvalEndpoint(t, mcpserver.Options{DisableApproval: true})
	id := newTicket(t, st)
	cs := httpClient(t, url, "2025-11-25", nil)
	ok(t, cs, "delete_object", map[string]any{"class_name": "Ticket", "object_id": id})
	if exists(t, st, "Ticket", id) {
		t.Fatal("not deleted")
	}
}

// newTicket creates a public ticket and returns its id.
func newTicket(t *testing.T, st store.Store) string {
	t.Helper()
	objs := []parse.Object{{"title": "to delete", "status": "open"}}
	if err := st.Create(context.Background(), "Ticket", objs); err != nil {
		t.Fatal(err)
	}
	return objs[0]["objectId"].(string)
}

// Ending the session (DELETE) while a person is being asked aborts the
// approval: the change is not made.
func TestApprovalAbortedByDelete(t *testing.T) {
	srv, url, st := approvalServer(t, mcpserver.Options{})
	id := newTicket(t, st)
	asking := make(chan struct{})
	wait := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		close(asking)
		select { // the person never answers
		case <-ctx.Done():
		case <-time.After(30 * time.Second):
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}
	cs := httpClient(t, url, "2025-11-25", wait)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_object", Arguments: map[string]any{"class_name": "Ticket", "object_id": id}})
		done <- err
	}()
	<-asking
	if r := raw(t, http.MethodDelete, url, "t", cs.ID(), ""); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call outlived its session")
	}
	// Barrier: Shutdown returns once every call has ended (a late write
	// would have landed by then).
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // bounds a hang
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if !exists(t, st, "Ticket", id) {
		t.Fatal("deleted although the approval was aborted")
	}
}
