package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// With --log-format json every line is a JSON object; the lines about a
// request carry its id (the client's X-Request-Id when it sends one), the
// audit event its request and correlation ids; no argument value, row
// value or secret appears anywhere in the log.
func TestJSONLogsCarryIDsAndNoValues(t *testing.T) {
	db := fixtureDB(t)
	const key = "key-Zq8sUPERSECRET"
	const needle = "needle-VALUE-7f3a"
	s := startServe(t, []string{"PARSEMCP_API_KEY=" + key, "PARSEMCP_LOG_FORMAT=json"}, "--store", "sqlite:"+db, "--verbose", "--audit", "stderr")
	ctx := context.Background()
	hc := &http.Client{Transport: headersTransport{"Authorization": "Bearer " + key, "X-Request-Id": "lb-req-42"}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"title": needle}, "limit": 2})
	q, _ := callTool(t, cs, "query_class", map[string]any{"class_name": "Ticket", "limit": 1})
	title, _ := q["results"].([]any)[0].(map[string]any)["title"].(string)
	if title == "" {
		t.Fatalf("no row: %v", q)
	}
	callTool(t, cs, "count_objects", map[string]any{"class_name": "NoSuchClass" + needle})
	cs.Close()

	// A request without an id gets one, echoed to the client.
	req, _ := http.NewRequest("GET", strings.TrimSuffix(s.url, "/mcp")+"/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if id := resp.Header.Get("X-Request-Id"); len(id) != 12 {
		t.Errorf("X-Request-Id = %q, want a made-up id", id)
	}

	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()
	out := s.stderr.String()
	var audits int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("not a JSON line: %q", line)
			continue
		}
		if m["msg"] == "tool_call" {
			audits++
			if m["request_id"] != "lb-req-42" || len(m["correlation_id"].(string)) != 12 {
				t.Errorf("audit event without the request's ids: %s", line)
			}
		}
	}
	if audits != 3 {
		t.Errorf("%d audit events, want 3:\n%s", audits, out)
	}
	for _, secret := range []string{key, needle, title} {
		if strings.Contains(out, secret) {
			t.Errorf("the log shows %q:\n%s", secret, out)
		}
	}
}

// headersTransport adds headers to every request.
type headersTransport map[string]string

func (h headersTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}
