// Package parserest is a store.Store backed by a running Parse Server,
// through its REST API (queries, writes, schemas) and its LiveQuery
// WebSocket (the change feed): for deployments where parsemcp cannot reach
// the database itself (hosted Parse Server, MongoDB).
//
// Parse Server enforces its own ACLs and class-level permissions: each
// call acts as the caller's Parse identity. A query without a read ACL
// (the master key's) sends the master key; one whose ACL names a user acts
// as that user through a session Parse Server mints for it (POST /loginAs,
// master key); a public-only ACL sends no credential (anonymous). An
// identity holding roles but no user has no REST equivalent and is
// refused (CheckIdentity, at start-up). The agent layer's own rules (tenant
// scope, filters, field allowlists, hidden classes, caps) still apply on
// top, in agent.Scope.
//
// Parse Server's error codes map to the store's errors (101 →
// ErrObjectNotFound, 119 → ErrPermissionDenied, 155 → ErrRateLimited after
// retries, …); network failures are retried with backoff within the
// call's deadline and then reported as ErrUnavailable.
package parserest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/schemacache"
)

// Config says which Parse Server to use and with which keys.
type Config struct {
	// ServerURL is Parse Server's mount point, e.g. http://host:1337/parse.
	ServerURL string
	AppID     string
	// MasterKey is needed for schemas, aggregation, system classes and
	// acting as users; without it only anonymous reads and writes work.
	MasterKey string
	// RESTKey and JavaScriptKey are sent when the server requires them.
	RESTKey       string
	JavaScriptKey string
	// HTTPClient defaults to a client with sane timeouts.
	HTTPClient *http.Client
	Logger     *slog.Logger
	// MaxResponseBytes caps one REST answer (default 64 MiB).
	MaxResponseBytes int64
	// LiveQueryURL is the LiveQuery WebSocket (default: ServerURL with
	// ws:// or wss://).
	LiveQueryURL string
	// LocalAggregateRows caps the rows one aggregation run by parsemcp
	// itself may fetch (see Store.Aggregate; default
	// DefaultLocalAggregateRows). A pipeline that would need more is
	// refused with store.ErrUnsupported.
	LocalAggregateRows int
	// Scratch opens an empty in-memory store holding exactly the classes
	// given: Store.Aggregate runs there, over the rows Parse Server lets
	// the caller read, the pipelines Parse Server cannot restrict to a
	// caller's rows (sqlite.Scratch is the one parsemcp uses). Without
	// it those aggregations are refused with store.ErrUnsupported; the
	// master key's run on Parse Server as before.
	Scratch func(ctx context.Context, schemas []parse.Schema) (store.Store, error)
}

// The environment variables ParseURL reads the keys from.
const (
	EnvMasterKey = "PARSEMCP_PARSE_MASTER_KEY"
	EnvRESTKey   = "PARSEMCP_PARSE_REST_KEY"
	EnvJSKey     = "PARSEMCP_PARSE_JS_KEY"
	EnvAppID     = "PARSEMCP_PARSE_APP_ID"
)

// IsURL reports whether spec names a Parse Server store.
func IsURL(spec string) bool {
	return strings.HasPrefix(spec, "parse+http://") || strings.HasPrefix(spec, "parse+https://")
}

// ParseURL reads parse+http(s)://APP_ID@host[:port]/mount into a Config;
// the keys come from the environment (PARSEMCP_PARSE_MASTER_KEY,
// PARSEMCP_PARSE_REST_KEY, PARSEMCP_PARSE_JS_KEY), the app id from the URL
// or PARSEMCP_PARSE_APP_ID. A password in the URL is refused: keys do not
// belong in URLs that get logged.
func ParseURL(spec string) (Config, error) {
	if !IsURL(spec) {
		return Config{}, fmt.Errorf("store %q: want parse+http(s)://APP_ID@host/parse", spec)
	}
	u, err := url.Parse(strings.TrimPrefix(spec, "parse+"))
	if err != nil {
		return Config{}, fmt.Errorf("store URL: %v", err)
	}
	cfg := Config{AppID: os.Getenv(EnvAppID), MasterKey: os.Getenv(EnvMasterKey), RESTKey: os.Getenv(EnvRESTKey), JavaScriptKey: os.Getenv(EnvJSKey)}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			return Config{}, fmt.Errorf("store URL: put keys in %s / %s, not in the URL", EnvMasterKey, EnvRESTKey)
		}
		cfg.AppID = u.User.Username()
	}
	if cfg.AppID == "" {
		return Config{}, fmt.Errorf("store URL: no application id (parse+http://APP_ID@host/parse or %s)", EnvAppID)
	}
	if u.Host == "" {
		return Config{}, fmt.Errorf("store URL %q: no host", spec)
	}
	u.User = nil
	path := strings.TrimSuffix(u.Path, "/")
	if path == "" {
		path = "/parse"
	}
	u.Path = path
	cfg.ServerURL = u.String()
	return cfg, nil
}

// Redacted is the URL without credentials, for logs.
func (c Config) Redacted() string {
	u, err := url.Parse(c.ServerURL)
	if err != nil {
		return "parse+?"
	}
	return "parse+" + u.Scheme + "://" + c.AppID + "@" + u.Host + u.Path
}

// Store is a Parse Server behind the store.Store interface.
type Store struct {
	cfg     Config
	base    string
	mount   string // the server URL's path, e.g. /parse (batch paths use it)
	display string
	http    *http.Client
	log     *slog.Logger
	schemas schemacache.Cache

	sessMu   sync.Mutex
	sessions map[string]string // user id → minted session token

	feedOnce sync.Once
	feed     *masterFeed // Watch's

	lqOnce           sync.Once
	lqMaster, lqUser *lqConn // LiveQuery connections (livequery.go)

	localSem chan struct{} // aggregations run here at once (aggregate_local.go)

	closeOnce sync.Once
}

var _ store.Store = (*Store)(nil)

// Open connects to Parse Server: it checks /health and, with a master key,
// that the key is accepted (GET /schemas).
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.ServerURL == "" || cfg.AppID == "" {
		return nil, errors.New("parserest: ServerURL and AppID are required")
	}
	if cfg.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		tr.ResponseHeaderTimeout = 5 * time.Minute
		cfg.HTTPClient = &http.Client{Transport: tr}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 64 << 20
	}
	if cfg.LocalAggregateRows <= 0 {
		cfg.LocalAggregateRows = DefaultLocalAggregateRows
	}
	s := &Store{cfg: cfg, base: strings.TrimSuffix(cfg.ServerURL, "/"), http: cfg.HTTPClient, log: cfg.Logger, sessions: map[string]string{},
		localSem: make(chan struct{}, localAggregates)}
	s.display = cfg.Redacted()
	if u, err := url.Parse(s.base); err == nil {
		s.mount = u.Path
	}
	s.schemas.Load = s.loadSchemas
	if err := s.do(ctx, request{method: http.MethodGet, path: "/health"}, nil); err != nil {
		return nil, fmt.Errorf("parserest: %s: %w", s.display, err)
	}
	if cfg.MasterKey != "" {
		if _, err := s.loadSchemas(ctx); err != nil {
			return nil, fmt.Errorf("parserest: %s: the master key was not accepted: %w", s.display, err)
		}
	}
	return s, nil
}

// Config returns the store's configuration (keys included: do not log it).
func (s *Store) Config() Config { return s.cfg }

// String describes the store without its keys.
func (s *Store) String() string { return s.display }

// HasMasterKey reports whether the store holds the master key.
func (s *Store) HasMasterKey() bool { return s.cfg.MasterKey != "" }

// Close releases idle connections and stops the change feed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.feedOnce.Do(func() {}) // no feed starts after this
		if s.feed != nil {
			s.feed.close()
		}
		s.lqOnce.Do(func() {})
		if s.lqMaster != nil {
			s.lqMaster.close()
			s.lqUser.close()
		}
		s.http.CloseIdleConnections()
	})
	return nil
}

// Ping is store.Pinger: Parse Server's /health, once (no retries: a load
// balancer asks again).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.once(ctx, request{method: http.MethodGet, path: "/health"}, s.base+"/health", nil, nil, 1); err != nil {
		return &store.Outage{Backend: "Parse Server", Err: err}
	}
	return nil
}
