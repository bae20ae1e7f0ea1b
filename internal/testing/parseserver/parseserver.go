// Package parseserver runs a real Parse Server 9 (with LiveQuery) for
// tests: it installs the version pinned by scripts/parse-server into the
// user's cache once, starts it on a free port against a PostgreSQL
// database, waits until /parse/health answers, and stops it when the test
// ends. A test may stop and start it again mid-test (same port, same
// database). Without node/npm or the npm registry the test skips with a
// one-line reason, except in CI (CI=true), where it fails.
package parseserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/internal/testing/freeport"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/internal/testing/testproc"
)

// Options configure a Parse Server. Zero values get test defaults.
type Options struct {
	// DatabaseURL is the PostgreSQL database Parse Server uses; empty
	// means a fresh database from pgtest.Database.
	DatabaseURL string
	AppID       string // default "parsemcp-test"
	MasterKey   string // default a random key
	// RESTKey and JSKey, when set, must be sent by clients (REST, LiveQuery).
	RESTKey string
	JSKey   string
	// CustomObjectIDs lets clients choose objectIds (allowCustomObjectId).
	CustomObjectIDs bool
	// AcceptAuthData names auth providers whose authData Parse Server
	// accepts unchecked (test data with authData, e.g. the demo's
	// "google", "apple" and "github" users).
	AcceptAuthData []string
	// RateLimit, "PATH COUNT WINDOW_MS", rate-limits one path for every
	// client (Parse Server answers 429).
	RateLimit string
	// LiveQueryClasses are the classes with LiveQuery, each a regular
	// expression anchored at both ends; empty means every class.
	LiveQueryClasses []string
	// MaxLimit, when set, is the most rows one find answers (Parse
	// Server's maxLimit), whatever limit the client asks for.
	MaxLimit int
}

// Server is a running (or stopped) Parse Server that belongs to one test.
type Server struct {
	t    testing.TB
	opts Options
	dir  string // working directory; logs live here
	port int
	proc *testproc.Server
}

// Start installs (once per process) and starts a Parse Server for t; it is
// stopped when t ends. It skips t when Parse Server cannot be installed or
// PostgreSQL is absent (fails in CI).
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	dir, err := install()
	if err != nil {
		testproc.Unavailable(t, "Parse Server not available: "+err.Error())
	}
	scripts, err := scriptDir()
	if err != nil {
		testproc.Unavailable(t, "Parse Server not available: "+err.Error())
	}
	if opts.DatabaseURL == "" {
		opts.DatabaseURL = pgtest.Database(t, "parse")
	}
	if opts.AppID == "" {
		opts.AppID = "parsemcp-test"
	}
	if opts.MasterKey == "" {
		opts.MasterKey = "master-" + randomHex(12)
	}
	s := &Server{t: t, opts: opts, dir: t.TempDir()}
	if s.port, err = freeport.Get(); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(s.dir, "server.out")
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	env := append(os.Environ(),
		"NODE_PATH="+filepath.Join(dir, "node_modules"),
		fmt.Sprintf("PARSE_PORT=%d", s.port),
		"PARSE_DATABASE_URI="+opts.DatabaseURL,
		"PARSE_APP_ID="+opts.AppID,
		"PARSE_MASTER_KEY="+opts.MasterKey,
		"PARSE_REST_KEY="+opts.RESTKey,
		"PARSE_JS_KEY="+opts.JSKey,
		"PARSE_LIVEQUERY_CLASSES="+strings.Join(opts.LiveQueryClasses, ","),
		"PARSE_LOGS_FOLDER="+filepath.Join(s.dir, "logs"),
	)
	if len(opts.AcceptAuthData) > 0 {
		env = append(env, "PARSE_ACCEPT_AUTH_DATA="+strings.Join(opts.AcceptAuthData, ","))
	}
	if opts.CustomObjectIDs {
		env = append(env, "PARSE_ALLOW_CUSTOM_OBJECT_ID=1")
	}
	if opts.RateLimit != "" {
		env = append(env, "PARSE_RATE_LIMIT="+opts.RateLimit)
	}
	if opts.MaxLimit > 0 {
		env = append(env, "PARSE_MAX_LIMIT="+strconv.Itoa(opts.MaxLimit))
	}
	t.Cleanup(func() {
		if t.Failed() { // s.proc is nil when the start failed
			t.Logf("Parse Server log (tail):\n%s", tail(testproc.ReadLog(logFile), 4000))
		}
	})
	s.proc = testproc.Start(t, testproc.Options{
		Name: "Parse Server",
		Command: func() *exec.Cmd {
			cmd := exec.Command("node", filepath.Join(scripts, "server.js"))
			cmd.Dir = s.dir // Parse Server's own files (logs) stay in the temporary directory
			cmd.Stdout, cmd.Stderr = out, out
			cmd.Env = env
			return cmd
		},
		Ready:    s.healthy,
		Shutdown: func(p *os.Process) { _ = p.Signal(syscall.SIGTERM) },
		LogFile:  logFile,
	})
	return s
}

// URL is the server URL clients use, http://127.0.0.1:<port>/parse.
func (s *Server) URL() string { return fmt.Sprintf("http://127.0.0.1:%d/parse", s.port) }

// WebSocketURL is the LiveQuery endpoint, ws://127.0.0.1:<port>/parse.
func (s *Server) WebSocketURL() string { return fmt.Sprintf("ws://127.0.0.1:%d/parse", s.port) }

// AppID, MasterKey, RESTKey and JSKey are the server's keys.
func (s *Server) AppID() string     { return s.opts.AppID }
func (s *Server) MasterKey() string { return s.opts.MasterKey }
func (s *Server) RESTKey() string   { return s.opts.RESTKey }
func (s *Server) JSKey() string     { return s.opts.JSKey }

// DatabaseURL is the PostgreSQL database Parse Server keeps its data in.
func (s *Server) DatabaseURL() string { return s.opts.DatabaseURL }

// Start starts the stopped server again (same port and database) and
// returns once /parse/health answers.
func (s *Server) Start() {
	s.t.Helper()
	s.proc.Start()
}

// Stop stops the server (SIGTERM, then a kill after 10 s) and returns once
// it has exited.
func (s *Server) Stop() {
	s.t.Helper()
	s.proc.Stop()
}

// Restart stops and starts the server.
func (s *Server) Restart() {
	s.t.Helper()
	s.proc.Restart()
}

func (s *Server) healthy() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s", resp.Status)
	}
	return nil
}

// Log returns what Parse Server printed so far (stdout and stderr).
func (s *Server) Log() string { return s.proc.Log() }

// Pid returns the Parse Server (node) process's id, 0 when it is stopped.
func (s *Server) Pid() int { return s.proc.Pid() }

// SignUp creates the user name (password "pw-" + name) through the REST
// API, as a client signing up does, and returns its id and session token;
// a refusal fails the test.
func (s *Server) SignUp(name string) (id, token string) {
	s.t.Helper()
	code, out := s.RequestJSON(http.MethodPost, "/users", map[string]any{"username": name, "password": "pw-" + name}, "", false)
	id, _ = out["objectId"].(string)
	token, _ = out["sessionToken"].(string)
	if code != http.StatusCreated || id == "" || token == "" {
		s.t.Fatalf("sign up %s: %d %v", name, code, out)
	}
	return id, token
}

// RequestJSON is Request for an answer that is a JSON object: the test
// fails when it is not one.
func (s *Server) RequestJSON(method, path string, body any, sessionToken string, master bool) (int, map[string]any) {
	s.t.Helper()
	code, raw := s.Request(method, path, body, sessionToken, master)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		s.t.Fatalf("%s %s: %d %s", method, path, code, raw)
	}
	return code, out
}

// Request calls the REST API with the application id (and the REST or
// JavaScript key) and
// either the master key (master) or a session token (when not empty).
// It returns the HTTP status and the body; a transport error fails t.
func (s *Server) Request(method, path string, body any, sessionToken string, master bool) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL()+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Parse-Application-Id", s.opts.AppID)
	switch {
	case s.opts.RESTKey != "":
		req.Header.Set("X-Parse-REST-API-Key", s.opts.RESTKey)
	case s.opts.JSKey != "":
		req.Header.Set("X-Parse-Javascript-Key", s.opts.JSKey)
	}
	if master {
		req.Header.Set("X-Parse-Master-Key", s.opts.MasterKey)
	}
	if sessionToken != "" {
		req.Header.Set("X-Parse-Session-Token", sessionToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("parseserver: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, b
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
