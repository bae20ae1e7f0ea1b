package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serve runs from a config file alone; the environment overrides a key of
// it; `parsemcp config` shows the result with the secrets masked.
func TestServeFromConfigFile(t *testing.T) {
	db := fixtureDB(t)
	cfg := filepath.Join(t.TempDir(), "parsemcp.yaml")
	body := "# parsemcp serve configuration\nstore: sqlite:" + db + "\naddr: 127.0.0.1:0\nmax-inflight: 3\nrate-limit: 100/m\nallowed-origin:\n  - app.example\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, []string{"PARSEMCP_MAX_INFLIGHT=5"}, "--config", cfg)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if out, isErr := callTool(t, cs, "count_objects", map[string]any{"class_name": "Ticket"}); isErr || out["count"].(float64) <= 0 {
		t.Fatalf("count over the configured store: %v", out)
	}

	stdout, stderr, code := run(t, []string{"PARSEMCP_CONFIG=" + cfg, "PARSEMCP_MAX_INFLIGHT=5", "PARSEMCP_API_KEY=very-secret-key"}, "config", "--rate-limit", "7/s")
	if code != 0 {
		t.Fatalf("config: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"store: sqlite:" + db + " # file", "max-inflight: 5 # env", "rate-limit: 7/s # flag", "allowed-origin: [app.example] # file", "api-key: '********' # env", "max-streams: 1000 # default"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("config output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "very-secret-key") {
		t.Errorf("config printed the API key:\n%s", stdout)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("store: sqlite:"+db+"\nmax-inflight: 3\nmax_streams: 4\n"), 0o600)
	_, stderr, code = run(t, nil, "serve", "--config", bad)
	if code == 0 || !strings.Contains(stderr, bad+`:3: unknown key "max_streams"`) {
		t.Fatalf("unknown key: exit %d\n%s", code, stderr)
	}
}
