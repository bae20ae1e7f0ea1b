package govtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jonboulle/clockwork"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/tools"
)

// The request kinds besides tools/call.
const (
	kindTool     = ""
	kindList     = "tools/list"          // answer: {"tools": [names, sorted]}
	kindResource = "resources/read"      // target: the URI
	kindComplete = "completion/complete" // target: a resource template URI; args: the partial class name
	kindRes      = "resources/list"      // answer: {"classes": [class names of the URIs, sorted, unique]}
	kindPrompt   = "prompts/get"         // target: the prompt; args: map[string]string
)

// errRPC is the "error_code" of a JSON-RPC (protocol-level) refusal.
const errRPC = "jsonrpc_error"

// Operator gates.
var (
	noGates  = agent.Gates{}
	allGates = agent.Gates{WriteTools: true, SchemaOps: true, RawCRUD: true, RawSchema: true}
)

// attack is one MCP request and what it must get.
type attack struct {
	name string
	// pol is "demo" (policy.Demo) or "test" (testPolicy); profile the
	// agent profile the factory builds with pol.Agent. Over HTTP the
	// profile comes from the request's bearer token instead, through
	// pol.Select, as in the real server.
	pol, profile string
	gates        agent.Gates
	http         bool
	header       http.Header // request headers (placeholders allowed in values)
	kind         string
	target       string
	args         any // placeholders @NAME@ are replaced with env.vars
	// code is the error_code the request must fail with ("" = success),
	// errRPC for a JSON-RPC error; msg, when set, the exact message (for
	// errRPC: a substring of the client's error); detail the details.kind.
	code, msg, detail string
	want              func(t *testing.T, e *env, out map[string]any)
	// twin repeats the request with twin[0] replaced by twin[1]: the two
	// answers must be identical once the names are swapped back (what is
	// hidden answers like what does not exist).
	twin [2]string
	// unchanged lists "Class#id" rows (placeholders allowed) that must
	// read the same from the raw store after the request (and its twin).
	unchanged []string
	// after runs further checks on the raw store.
	after func(t *testing.T, e *env)
	// httpStatus, for an HTTP case, is the status a plain POST of
	// initialize with the case's headers must get; with 401 its body must
	// be a JSON-RPC error with code -32001.
	httpStatus int
}

// expand replaces the @NAME@ placeholders of s.
func (e *env) expand(s string) string {
	for k, v := range e.vars {
		s = strings.ReplaceAll(s, "@"+k+"@", v)
	}
	if m := placeholderRE.FindString(s); m != "" {
		panic("unknown placeholder " + m + " in " + s) // a bug in the table
	}
	return s
}

var placeholderRE = regexp.MustCompile(`@[A-Z][A-Z_]*@`)

func (e *env) expandArgs(t *testing.T, args any) any {
	t.Helper()
	if args == nil {
		return nil
	}
	var out any
	if err := json.Unmarshal([]byte(e.expand(mustJSON(t, args))), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// clients caches one session per (policy, profile, gates, headers).
type clients struct {
	e     *env
	t     *testing.T // the backend's test: sessions live as long as it
	inmem map[string]*mcp.ClientSession
	https map[string]*httptest.Server
}

func (c *clients) server(pol string, gates agent.Gates, factory mcpserver.AgentFactory) *mcpserver.Server {
	cfg := tools.DefaultConfig
	cfg.Gates = gates
	// Index names shown, so the cases check that a protected field's
	// index stays hidden even then.
	cfg.ExposeExplain = true
	// The tools' time limits run on a clock that never moves: the table
	// is about access, and a loaded -race run took a $lookup self-join
	// past the 60 s aggregate limit.
	// A budget that holds every page these cases read whole (both copies
	// of a result count in it): the cases judge which rows come back, not
	// where a page is cut.
	srv, err := mcpserver.New(mcpserver.Options{Store: c.e.st, ToolConfig: &cfg, Agents: factory, Clock: clockwork.NewFakeClock(), MaxResponseBytes: 4 * mcpserver.DefaultMaxResponseBytes})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(srv.Close)
	return srv
}

// session returns the in-memory client session of a case: its server's
// factory builds every request's agent from the case's profile.
func (c *clients) session(tc attack) *mcp.ClientSession {
	t := c.t
	hdr := http.Header{}
	for k, vs := range tc.header {
		for _, v := range vs {
			hdr.Add(k, c.e.expand(v))
		}
	}
	key := fmt.Sprintf("%s|%s|%+v|%v", tc.pol, tc.profile, tc.gates, hdr)
	if cs, ok := c.inmem[key]; ok {
		return cs
	}
	pol, e := c.e.policyOf(tc.pol), c.e
	srv := c.server(tc.pol, tc.gates, func(ctx context.Context, r mcpserver.RequestInfo) (*agent.Agent, error) {
		h := r.Header
		if h == nil {
			h = hdr // the in-memory transport carries no headers
		}
		return pol.Agent(ctx, tc.profile, e.st, h)
	})
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "govattack", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	c.inmem[key] = cs
	return cs
}

// httpURL returns the URL of a real HTTP server (srv.Mux) whose factory
// selects the profile from the request's bearer token, as `parsemcp
// serve --policy` does.
func (c *clients) httpURL(tc attack) string {
	key := fmt.Sprintf("%s|%+v", tc.pol, tc.gates)
	if ts, ok := c.https[key]; ok {
		return ts.URL + "/mcp"
	}
	pol, e := c.e.policyOf(tc.pol), c.e
	srv := c.server(tc.pol, tc.gates, func(ctx context.Context, r mcpserver.RequestInfo) (*agent.Agent, error) {
		name, err := pol.Select(r.Header)
		if err != nil {
			return nil, err
		}
		return pol.Agent(ctx, name, e.st, r.Header)
	})
	ts := httptest.NewServer(srv.Mux(mcpserver.HTTPOptions{}))
	c.t.Cleanup(ts.Close)
	c.https[key] = ts
	return ts.URL + "/mcp"
}

// headerTransport adds headers to every request of an HTTP client.
type headerTransport struct{ h http.Header }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range h.h {
		r.Header[k] = vs
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connectHTTP opens a session over Streamable HTTP with the case's
// headers; a refused connection is returned as the error.
func (c *clients) connectHTTP(t *testing.T, tc attack) (*mcp.ClientSession, error) {
	hdr := http.Header{}
	for k, vs := range tc.header {
		for _, v := range vs {
			hdr.Add(k, c.e.expand(v))
		}
	}
	tr := &mcp.StreamableClientTransport{Endpoint: c.httpURL(tc), HTTPClient: &http.Client{Transport: headerTransport{hdr}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "govattack-http", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cs.Close() })
	return cs, nil
}

// runAll runs the table on one backend.
func runAll(t *testing.T, e *env) {
	start := time.Now()
	c := &clients{e: e, t: t, inmem: map[string]*mcp.ClientSession{}, https: map[string]*httptest.Server{}}
	cases := append(attackTable(), ruleCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCase(t, c, tc) })
	}
	t.Logf("%s: %d cases in %s", e.name, len(cases), time.Since(start).Round(time.Millisecond))
}

func runCase(t *testing.T, c *clients, tc attack) {
	e := c.e
	before := map[string]parse.Object{}
	for _, ref := range tc.unchanged {
		class, id, _ := strings.Cut(e.expand(ref), "#")
		before[class+"#"+id] = e.raw(t, class, id)
		if before[class+"#"+id] == nil {
			t.Fatalf("%s: no such row to watch", ref)
		}
	}
	args := e.expandArgs(t, tc.args)
	target := e.expand(tc.target)
	out, isErr := request(t, c, tc, target, args)
	if os.Getenv("GOVTEST_DUMP") != "" { // debugging aid: log every answer
		t.Logf("answer: %.600s", mustJSON(t, out))
	}
	req := target + " " + mustJSON(t, args) + " " + fmt.Sprint(tc.header)
	checkNoLeak(t, secretsOf(tc), e.expand(req), out)
	switch {
	case tc.code == "" && isErr:
		t.Fatalf("want success, got error %s", mustJSON(t, out))
	case tc.code != "" && !isErr:
		t.Fatalf("want error %s, got success %s", tc.code, mustJSON(t, out))
	case tc.code != "" && out["error_code"] != tc.code:
		t.Fatalf("want error_code %s, got %v (%v)", tc.code, out["error_code"], out["error"])
	}
	if tc.msg != "" {
		msg := e.expand(tc.msg)
		got, _ := out["error"].(string)
		if tc.code == errRPC && !strings.Contains(got, msg) || tc.code != errRPC && got != msg {
			t.Errorf("message\n got %q\nwant %q", got, msg)
		}
	}
	if tc.detail != "" {
		d, _ := out["details"].(map[string]any)
		if d["kind"] != tc.detail {
			t.Errorf("details.kind %v, want %s (%s)", d["kind"], tc.detail, mustJSON(t, out))
		}
	}
	if tc.want != nil {
		tc.want(t, e, out)
	}
	if tc.twin[0] != "" {
		from, to := e.expand(tc.twin[0]), e.expand(tc.twin[1])
		var targs any
		if args != nil {
			if err := json.Unmarshal([]byte(strings.ReplaceAll(mustJSON(t, args), from, to)), &targs); err != nil {
				t.Fatal(err)
			}
		}
		twin, twinErr := request(t, c, tc, strings.ReplaceAll(target, from, to), targs)
		got, other := mustJSON(t, out), strings.ReplaceAll(mustJSON(t, twin), to, from)
		if isErr != twinErr || got != other {
			t.Errorf("%s and %s answer differently:\n%s\n%s", from, to, got, mustJSON(t, twin))
		}
	}
	for ref, was := range before {
		class, id, _ := strings.Cut(ref, "#")
		if d := cmp.Diff(was, e.raw(t, class, id)); d != "" {
			t.Errorf("%s changed (-before +after):\n%s", ref, d)
		}
	}
	if tc.after != nil {
		tc.after(t, e)
	}
	if tc.httpStatus != 0 {
		checkHTTPStatus(t, c, tc)
	}
}

// checkHTTPStatus posts initialize with the case's headers, as a plain
// HTTP client, and checks the status (and, for 401, the JSON-RPC error).
func checkHTTPStatus(t *testing.T, c *clients, tc attack) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, c.httpURL(tc), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range tc.header {
		for _, v := range vs {
			req.Header.Add(k, c.e.expand(v))
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != tc.httpStatus {
		t.Fatalf("POST initialize with %v: HTTP %d, want %d (%.300s)", tc.header, resp.StatusCode, tc.httpStatus, raw)
	}
	if tc.httpStatus == http.StatusUnauthorized {
		var msg struct {
			Error struct{ Code int } `json:"error"`
		}
		if err := json.Unmarshal(raw, &msg); err != nil || msg.Error.Code != mcpserver.CodeUnauthorized {
			t.Fatalf("401 body %q: want a JSON-RPC error with code %d", raw, mcpserver.CodeUnauthorized)
		}
	}
}

// request makes the case's request and returns its answer as a map; a
// refusal is isErr with error_code (errRPC for a JSON-RPC error) and error.
func request(t *testing.T, c *clients, tc attack, target string, args any) (map[string]any, bool) {
	t.Helper()
	ctx := context.Background()
	rpcErr := func(err error) (map[string]any, bool) {
		return map[string]any{"error_code": errRPC, "error": err.Error()}, true
	}
	var cs *mcp.ClientSession
	if tc.http {
		var err error
		if cs, err = c.connectHTTP(t, tc); err != nil {
			return rpcErr(err)
		}
	} else {
		cs = c.session(tc)
	}
	switch tc.kind {
	case kindTool:
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: target, Arguments: args})
		if err != nil {
			return rpcErr(err)
		}
		if len(res.Content) != 1 {
			t.Fatalf("%s: want 1 content item, got %d", target, len(res.Content))
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
			t.Fatalf("%s: content is not JSON: %v", target, err)
		}
		return out, res.IsError
	case kindList:
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			return rpcErr(err)
		}
		names := []any{}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		sort.Slice(names, func(i, j int) bool { return names[i].(string) < names[j].(string) })
		return map[string]any{"tools": names}, false
	case kindResource:
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: target})
		if err != nil {
			return rpcErr(err)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(rr.Contents[0].Text), &out); err != nil {
			t.Fatalf("resource is not JSON: %v", err)
		}
		return out, false
	case kindRes:
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			return rpcErr(err)
		}
		var classes []string
		for _, r := range res.Resources {
			if r.MIMEType != "application/json" {
				continue // the documentation, the same for everyone
			}
			class, _, _ := strings.Cut(strings.TrimPrefix(r.URI, "parse://"), "/")
			if !slices.Contains(classes, class) {
				classes = append(classes, class)
			}
		}
		slices.Sort(classes)
		return map[string]any{"classes": asJSON(t, classes)}, false
	case kindPrompt:
		pargs := map[string]string{}
		for k, v := range args.(map[string]any) {
			pargs[k] = v.(string)
		}
		r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: target, Arguments: pargs})
		if err != nil {
			return rpcErr(err)
		}
		return map[string]any{"text": r.Messages[0].Content.(*mcp.TextContent).Text}, false
	case kindComplete:
		res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: target},
			Argument: mcp.CompleteParamsArgument{Name: "className", Value: args.(string)}})
		if err != nil {
			return rpcErr(err)
		}
		values := []any{}
		for _, v := range res.Completion.Values {
			values = append(values, v)
		}
		return map[string]any{"values": values}, false
	}
	t.Fatalf("unknown kind %q", tc.kind)
	return nil, false
}

// secretsOf lists the strings the answer to tc must not contain (unless
// the request does).
func secretsOf(tc attack) []string {
	s := []string{memberSession, expiredSession, "_hashed_password", "sessionToken", `"_Session"`}
	if tc.pol == "test" {
		// outside Ticket's agent_fields, and hidden from every agent
		s = append(s, markTag, `"Order"`)
	}
	if tc.profile == "admin" && tc.pol == "demo" || tc.profile == "root" && tc.pol == "test" {
		return s // the master key
	}
	// Every other profile holds no master key, and is bound to Acme or
	// (roles-admin) reads no tenant-scoped class.
	s = append(s, markMasterOnly, markGlobex, markGlobexOpen, globex, initech)
	switch tc.profile {
	case "analyst", "manager", "filtered", "lead", "triage", "roles-admin":
		// role Manager (or Admin) reads Project.budget
	default:
		s = append(s, markBudget)
	}
	if tc.profile != "roles-admin" {
		s = append(s, markEmail) // only roles Sales and Admin read Customer.email
	}
	if tc.pol == "test" {
		s = append(s, `"Customer"`) // hidden except from the master key
		if tc.profile == "no-product" {
			s = append(s, `"Product"`)
		}
	}
	return s
}

func checkNoLeak(t *testing.T, secrets []string, req string, out map[string]any) {
	t.Helper()
	text := mustJSON(t, out)
	for _, s := range secrets {
		if strings.Contains(text, s) && !strings.Contains(req, strings.Trim(s, `"`)) {
			t.Fatalf("LEAK: the answer contains %s:\n%s", s, text)
		}
	}
}

// ---- checks of successful answers ----------------------------------------

// ids extracts the objectIds of a results array.
func ids(t *testing.T, v any) []string {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("results: %v", v)
	}
	out := []string{}
	for _, r := range list {
		out = append(out, r.(map[string]any)[parse.FieldObjectID].(string))
	}
	return out
}

// wantIDs checks the objectIds of "results", in order.
func wantIDs(truth func(t *testing.T, e *env) []string) func(*testing.T, *env, map[string]any) {
	return func(t *testing.T, e *env, out map[string]any) {
		t.Helper()
		want := truth(t, e)
		if want == nil {
			want = []string{}
		}
		if got := ids(t, out["results"]); !slices.Equal(got, want) {
			t.Fatalf("results %v, want %v", got, want)
		}
	}
}

// wantNum checks a numeric field of the answer.
func wantNum(field string, truth func(t *testing.T, e *env) int) func(*testing.T, *env, map[string]any) {
	return func(t *testing.T, e *env, out map[string]any) {
		t.Helper()
		if got, want := out[field], float64(truth(t, e)); got != want {
			t.Fatalf("%s = %v, want %v", field, got, want)
		}
	}
}

// wantJSON checks fields of the answer against JSON (placeholders allowed).
func wantJSON(fields map[string]string) func(*testing.T, *env, map[string]any) {
	return func(t *testing.T, e *env, out map[string]any) {
		t.Helper()
		for k, js := range fields {
			var want any
			if err := json.Unmarshal([]byte(e.expand(js)), &want); err != nil {
				t.Fatalf("bad JSON in the table: %v", err)
			}
			if d := cmp.Diff(want, out[k]); d != "" {
				t.Fatalf("%s (-want +got):\n%s", k, d)
			}
		}
	}
}

func both(checks ...func(*testing.T, *env, map[string]any)) func(*testing.T, *env, map[string]any) {
	return func(t *testing.T, e *env, out map[string]any) {
		t.Helper()
		for _, c := range checks {
			c(t, e, out)
		}
	}
}

// asJSON round-trips v through JSON (the form the client sees).
func asJSON(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(mustJSON(t, v)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// only keeps the listed fields of a raw row (and the ones every row has).
func only(r parse.Object, fields ...string) map[string]any {
	out := map[string]any{}
	for _, f := range append([]string{parse.FieldObjectID, parse.FieldCreatedAt, parse.FieldUpdatedAt}, fields...) {
		if v, ok := r[f]; ok {
			out[f] = v
		}
	}
	return out
}

// without returns a copy of a raw row without the listed fields.
func without(r parse.Object, fields ...string) map[string]any {
	out := map[string]any{}
	for k, v := range r {
		if !slices.Contains(fields, k) {
			out[k] = v
		}
	}
	return out
}
