package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/tools"
)

// anonymousHeader asks the test's agent factory for an anonymous agent.
const anonymousHeader = "X-Compat-Anonymous"

// who is one caller: the same identity on both sides.
type who struct {
	name  string
	token string // a Parse Server session token; "" for master and anonymous
	anon  bool
}

func (w who) master() bool { return w.token == "" && !w.anon }

// pair is Parse Server and parsemcp serving one database.
type pair struct {
	t       *testing.T
	ps      *parseserver.Server
	st      store.Store
	mcpURL  string
	clients map[string]*mcp.ClientSession
}

// newPair serves db through parsemcp's HTTP handler (opened with Open:
// no migration) next to the running Parse Server. A request with a Parse
// session token acts as that token's user (resolved from _Session, as
// `parsemcp serve` does); anonymousHeader asks for an anonymous agent;
// otherwise the agent holds the master key. Agents have perm; with Write
// or more, the operator's write gates are open.
func newPair(t *testing.T, db string, ps *parseserver.Server, perm agent.Permission) *pair {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	factory := func(ctx context.Context, r mcpserver.RequestInfo) (*agent.Agent, error) {
		if r.Header == nil {
			return agent.New(perm, agent.Identity{Mode: agent.AuthMaster}), nil
		}
		if tok := r.Header.Get("X-Parse-Session-Token"); tok != "" {
			id, err := agent.SessionIdentity(ctx, st, tok, time.Now())
			if err != nil {
				return nil, err
			}
			return agent.New(perm, id), nil
		}
		if r.Header.Get(anonymousHeader) != "" {
			return agent.New(perm, agent.Identity{Mode: agent.AuthAnonymous}), nil
		}
		return agent.New(perm, agent.Identity{Mode: agent.AuthMaster}), nil
	}
	cfg := tools.DefaultConfig
	if perm >= agent.Write {
		cfg.Gates = agent.Gates{WriteTools: true, RawCRUD: true}
	}
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Agents: factory, MaxResponseBytes: 50 << 20, ToolConfig: &cfg, DisableApproval: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv.Handler(mcpserver.HTTPOptions{}))
	t.Cleanup(hs.Close)
	return &pair{t: t, ps: ps, st: st, mcpURL: hs.URL, clients: map[string]*mcp.ClientSession{}}
}

type headerTransport struct{ h http.Header }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// client returns w's MCP session with parsemcp.
func (p *pair) client(w who) *mcp.ClientSession {
	p.t.Helper()
	if cs := p.clients[w.name]; cs != nil {
		return cs
	}
	h := http.Header{}
	if w.token != "" {
		h.Set("X-Parse-Session-Token", w.token)
	}
	if w.anon {
		h.Set(anonymousHeader, "1")
	}
	tr := &mcp.StreamableClientTransport{Endpoint: p.mcpURL, HTTPClient: &http.Client{Transport: headerTransport{h}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "compat-" + w.name, Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		p.t.Fatalf("connect as %s: %v", w.name, err)
	}
	p.t.Cleanup(func() { cs.Close() })
	p.clients[w.name] = cs
	return cs
}

// tool calls a parsemcp tool as w; isErr reports a tool error (its
// error_code in out["error_code"]).
func (p *pair) tool(w who, name string, args map[string]any) (out map[string]any, isErr bool) {
	p.t.Helper()
	res, err := p.client(w).CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		p.t.Fatalf("%s as %s: %v", name, w.name, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		p.t.Fatalf("%s as %s: %v: %s", name, w.name, err, text)
	}
	return out, res.IsError
}

// rest calls Parse Server's REST API as w; it returns the decoded body
// and whether Parse Server answered with an error.
func (p *pair) rest(w who, method, path string, params url.Values) (map[string]any, bool) {
	p.t.Helper()
	if len(params) > 0 {
		path += "?" + params.Encode()
	}
	code, body := p.ps.Request(method, path, nil, w.token, w.master())
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		p.t.Fatalf("Parse Server %s %s as %s: %d %s", method, path, w.name, code, body)
	}
	return out, code >= 400
}

// jsonString renders v compactly for a REST parameter or a report.
func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// diffs collects the differences of one suite run, reported at the end in
// one list (each known difference is matched by a rule from
// docs/COMPATIBILITY.md instead).
type diffs struct {
	t     *testing.T
	kinds map[string][]string // kind → examples
	order []string
	n     int
	ran   int
	known map[string]int // known difference (docs/COMPATIBILITY.md) → times met
}

// Known differences, each listed in docs/COMPATIBILITY.md with its reason.
const (
	knownAuthData        = "authData is never returned to an agent (master included)"
	knownArrayEquality   = "Parse Server's PostgreSQL adapter fails on equality with an Array field (internal error)"
	knownSortID          = "Parse Server's PostgreSQL adapter cannot $sort by _id"
	knownGroupDotted     = "Parse Server's PostgreSQL adapter refuses dotted paths in $group"
	knownAggRelations    = "Parse Server adds Relation markers to aggregate rows"
	knownCountStage      = "Parse Server's PostgreSQL adapter ignores the $count stage"
	knownNullAccumulator = "Parse Server drops an accumulator over no values; parsemcp's $sum gives 0"
	knownNinNull         = "Parse Server's PostgreSQL adapter leaves out rows whose field is null from $nin"
	knownSkipAfterSort   = "Parse Server's PostgreSQL adapter writes invalid SQL for $group, $sort, $skip"
	knownMatchPointer    = "Parse Server's PostgreSQL aggregate $match with a Pointer value matches nothing"
	knownNullsOrder      = "Parse Server's PostgreSQL adapter sorts missing values last ascending (first descending); parsemcp sorts them first, as Parse Server on MongoDB"
	knownProtectedKeys   = "naming a protected field (keys, where, order) is refused as an unknown one is (access_denied, field_denied); Parse Server drops it from keys"
	knownCountArray      = "Parse Server answers a count its readUserFields refuse with \"count\": []"
	knownGroupDateParts  = "Parse Server's PostgreSQL adapter does not group by date parts ($year, $month …)"
	knownUnwind          = "Parse Server's PostgreSQL adapter does not unwind a jsonb array"
	knownAggExists       = "Parse Server's PostgreSQL aggregate $match cannot use $exists on a typed column"
)

// met records a known difference.
func (d *diffs) met(kind string) {
	if d.known == nil {
		d.known = map[string]int{}
	}
	d.known[kind]++
}

// add records a difference of a kind (e.g. "Ticket include: key kept")
// with its detail.
func (d *diffs) add(kind, format string, args ...any) {
	if d.kinds == nil {
		d.kinds = map[string][]string{}
	}
	if _, seen := d.kinds[kind]; !seen {
		d.order = append(d.order, kind)
	}
	d.kinds[kind] = append(d.kinds[kind], fmt.Sprintf(format, args...))
	d.n++
}

func (d *diffs) report(what string) {
	d.t.Helper()
	d.t.Logf("%s: %d compared, %d different", what, d.ran, d.n)
	for k, n := range d.known {
		d.t.Logf("%s: known difference met %d times: %s", what, n, k)
	}
	if d.n == 0 {
		return
	}
	var b strings.Builder
	for _, k := range d.order {
		ex := d.kinds[k][0]
		if len(ex) > 700 {
			ex = ex[:700] + "…"
		}
		fmt.Fprintf(&b, "- %s (%d times), e.g. %s\n", k, len(d.kinds[k]), ex)
	}
	d.t.Errorf("%s: %d differences between Parse Server and parsemcp, by kind:\n%s", what, d.n, b.String())
}
