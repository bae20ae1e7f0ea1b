package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// The backends.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Identities are the agents the benchmark can act as: the master key (no
// ACL in the SQL) and "member", a demo user in role org-acme (the ACL is
// part of every statement, as for any governed agent).
var Identities = map[string]agent.Identity{
	"master": {Mode: agent.AuthMaster},
	"member": {Mode: agent.AuthUser, UserID: demo.MemberUserID, Roles: []string{demo.RoleAcme}},
}

// IdentityNames lists Identities, sorted.
func IdentityNames() []string {
	out := make([]string, 0, len(Identities))
	for k := range Identities {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ErrNoPostgres is returned by OpenEnv when the PostgreSQL server is not
// reachable.
var ErrNoPostgres = errors.New("PostgreSQL not reachable")

// Env is one backend holding the demo dataset.
type Env struct {
	Backend string
	Store   store.Store
	SQL     SQLRunner
	closers []func() error
}

// OpenEnv opens the backend with a rows-object demo dataset: the cached
// SQLite file, or a fresh PostgreSQL database (dropped by Close); with
// PARSEMCP_BENCH_DB set, that PostgreSQL database, which holds the demo
// data already (parsemcp demo --rows N --out URL, then ANALYZE).
func OpenEnv(ctx context.Context, backend string, rows int, pgURL string, log io.Writer) (*Env, error) {
	e := &Env{Backend: backend}
	switch backend {
	case SQLite:
		path, err := CachedSQLite(ctx, rows, log)
		if err != nil {
			return nil, err
		}
		st, err := sqlite.Create(ctx, path)
		if err != nil {
			return nil, err
		}
		e.Store = st
		e.closers = append(e.closers, st.Close)
	case Postgres:
		if u := os.Getenv("PARSEMCP_BENCH_DB"); u != "" {
			// A database holding the demo data already, used as it is.
			st, err := postgres.Open(ctx, u)
			if err != nil {
				return nil, err
			}
			e.Store = st
			e.closers = append(e.closers, st.Close)
			break
		}
		if pgURL == "" {
			pgURL = PostgresURL()
		}
		if err := Reachable(ctx, pgURL); err != nil {
			return nil, fmt.Errorf("%w at %s: %v", ErrNoPostgres, redact(pgURL), err)
		}
		db, err := NewPostgresDB(ctx, pgURL, rows, log)
		if db != nil {
			e.closers = append(e.closers, func() error {
				err := db.Drop()
				if err == nil {
					fmt.Fprintf(log, "postgres: dropped database %s\n", db.Name)
				}
				return err
			})
		}
		if err != nil {
			e.Close()
			return nil, err
		}
		st, err := postgres.Create(ctx, db.URL)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.Store = st
		e.closers = append(e.closers, st.Close)
	default:
		return nil, fmt.Errorf("unknown backend %q (want %s or %s)", backend, SQLite, Postgres)
	}
	d, err := NewSQLRunner(e.Store)
	if err != nil {
		e.Close()
		return nil, err
	}
	e.SQL = d
	return e, nil
}

// Close closes the store and drops what OpenEnv created, last first.
func (e *Env) Close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i]())
	}
	e.closers = nil
	return errors.Join(errs...)
}

func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	return raw
}

// Session is one identity's MCP server over an Env, with real SDK clients
// connected in memory and (optionally) over Streamable HTTP.
type Session struct {
	Env      *Env
	Identity string
	Agent    *agent.Agent
	Server   *mcpserver.Server
	Mem      *mcp.ClientSession
	HTTP     *mcp.ClientSession // nil without HTTP
	// Protocol is the negotiated protocol version (both clients).
	Protocol string

	closers []func() error
}

// BenchBudget is the response budget of the benchmarked servers, in bytes:
// far above a 100-row find page (about 95 KB), so no result is cut.
const BenchBudget = 1 << 20

// NewSession builds the server for identity over e and connects clients.
func NewSession(ctx context.Context, e *Env, identity string, withHTTP bool) (*Session, error) {
	id, ok := Identities[identity]
	if !ok {
		return nil, fmt.Errorf("unknown identity %q (want one of %s)", identity, strings.Join(IdentityNames(), ", "))
	}
	a := agent.New(agent.Readonly, id)
	// The response budget is lifted (BenchBudget): a find sends its whole
	// page, as the direct baseline and the peers do.
	srv, err := mcpserver.New(mcpserver.Options{Store: e.Store, MaxResponseBytes: BenchBudget, Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
		return a, nil
	}})
	if err != nil {
		return nil, err
	}
	s := &Session{Env: e, Identity: identity, Agent: a, Server: srv}
	s.closers = append(s.closers, func() error { srv.Close(); return nil })

	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.closers = append(s.closers, ss.Close)
	client := mcp.NewClient(&mcp.Implementation{Name: "parsemcp-bench", Version: "1"}, nil)
	s.Mem, err = client.Connect(ctx, ct, nil)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.closers = append(s.closers, s.Mem.Close)
	s.Protocol = s.Mem.InitializeResult().ProtocolVersion

	if withHTTP {
		ts := httptest.NewServer(srv.Handler(mcpserver.HTTPOptions{}))
		s.closers = append(s.closers, func() error { ts.Close(); return nil })
		hc := mcp.NewClient(&mcp.Implementation{Name: "parsemcp-bench-http", Version: "1"}, nil)
		s.HTTP, err = hc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: ts.Client(), DisableStandaloneSSE: true}, nil)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.closers = append(s.closers, s.HTTP.Close)
	}
	return s, nil
}

// HasTool reports whether the server offers the tool to this identity
// (asked over MCP, as an agent would).
func (s *Session) HasTool(ctx context.Context, name string) (bool, error) {
	for t, err := range s.Mem.Tools(ctx, nil) {
		if err != nil {
			return false, err
		}
		if t.Name == name {
			return true, nil
		}
	}
	return false, nil
}

// Close disconnects the clients and closes the server.
func (s *Session) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}
