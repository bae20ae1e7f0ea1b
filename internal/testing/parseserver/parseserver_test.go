package parseserver_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestStartStopRestart writes through one Parse Server, stops it (calls
// fail), starts it again on the same port and database (the object is
// still there) and checks the key rules it was started with.
func TestStartStopRestart(t *testing.T) {
	s := parseserver.Start(t, parseserver.Options{RESTKey: "rest-key"})
	code, body := s.Request(http.MethodPost, "/classes/Thing", map[string]any{"name": "a"}, "", true)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var created struct{ ObjectID string }
	if err := json.Unmarshal(body, &created); err != nil || created.ObjectID == "" {
		t.Fatalf("create answer %s: %v", body, err)
	}

	// Without the master key, reading the public object works.
	code, body = s.Request(http.MethodGet, "/classes/Thing/"+created.ObjectID, nil, "", false)
	if code != http.StatusOK || !strings.Contains(string(body), `"name":"a"`) {
		t.Fatalf("get: %d %s", code, body)
	}

	s.Stop()
	if _, err := http.Get(s.URL() + "/health"); err == nil {
		t.Fatal("health answered after Stop")
	}
	s.Start()
	code, body = s.Request(http.MethodGet, "/classes/Thing/"+created.ObjectID, nil, "", true)
	if code != http.StatusOK || !strings.Contains(string(body), `"name":"a"`) {
		t.Fatalf("get after restart: %d %s", code, body)
	}
	if _, err := os.Stat("logs"); err == nil {
		t.Fatal("Parse Server wrote a logs folder into the package directory")
	}
}
