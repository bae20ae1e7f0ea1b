package mcpserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// getJSON GETs url and returns the status code, the JSON object answered
// and the headers.
func getJSON(t *testing.T, url string) (int, map[string]any, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, m, resp.Header
}

// wantHealth checks /health: its status code and status, and that dep
// (unless "") is named with a reason holding want, in words that name no
// address.
func wantHealth(t *testing.T, url string, code int, status, dep, want string) {
	t.Helper()
	got, m, h := getJSON(t, url+"/health")
	retry := h.Get("Retry-After")
	if got != code || m["status"] != status {
		t.Fatalf("/health: %d %v, want %d %s", got, m, code, status)
	}
	if code == http.StatusServiceUnavailable && retry == "" {
		t.Fatalf("/health 503 without Retry-After: %v", m)
	}
	if dep == "" {
		if len(m) != 1 {
			t.Fatalf("/health names a dependency while all is well: %v", m)
		}
		return
	}
	why, _ := m[dep].(string)
	if !strings.Contains(why, want) || strings.Contains(why, "127.0.0.1") {
		t.Fatalf("/health %s: %q, want it to say %q", dep, why, want)
	}
}
