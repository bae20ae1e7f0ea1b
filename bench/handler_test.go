//go:build bench

package bench

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// BenchmarkHandler measures one tools/call through the server's HTTP
// handler (Streamable HTTP, the master key, PostgreSQL) with the response
// recorded in memory: no network and no client decoding, so ns/op,
// B/op and allocs/op are the server's own per-call cost (the SQL
// included), and cpu-ns/op the process's CPU time per call. Profile with
// -cpuprofile / -memprofile:
//
//	PARSEMCP_BENCH_DB=postgres://…/DB go test -tags bench ./bench -run '^$' -bench Handler -benchtime 500x -cpuprofile cpu.out
func BenchmarkHandler(b *testing.B) {
	s := envs.session(b, Postgres, "master")
	id := pickObjectID(b, s)
	calls := map[string]string{
		"find":  `{"name":"query_class","arguments":{"class_name":"Ticket","where":{"status":"open"},"order":"-createdAt","limit":100}}`,
		"count": `{"name":"count_objects","arguments":{"class_name":"Ticket","where":{"status":"open"}}}`,
		"get":   `{"name":"get_object","arguments":{"class_name":"Ticket","object_id":"` + id + `"}}`,
		"group": `{"name":"aggregate","arguments":{"class_name":"Ticket","pipeline":[{"$group":{"_id":"$status","count":{"$sum":1}}}]}}`,
	}
	h := s.Server.Handler(mcpserver.HTTPOptions{})
	session := handlerInit(b, h)
	// The 2026-07-28 protocol: no session, the version and capabilities in
	// each request's _meta, a server session per request.
	stateless := strings.Replace(calls["get"], `{"name"`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name"`, 1)
	for _, op := range []string{"find", "get", "count", "group", "get-2026"} {
		b.Run(op, func(b *testing.B) {
			body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + calls[op] + `}`
			sid := session
			if op == "get-2026" {
				body = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + stateless + `}`
				sid = ""
			}
			b.ReportAllocs()
			var n int
			cpu0 := selfCPU(b)
			for b.Loop() {
				w := handlerPost(h, sid, body)
				if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"result"`)) || bytes.Contains(w.Body.Bytes(), []byte(`"isError":true`)) {
					b.Fatalf("HTTP %d: %.300s", w.Code, w.Body.String())
				}
				n = w.Body.Len()
			}
			b.ReportMetric(float64(n), "resp-bytes")
			// The process's CPU time per call: what the server spends on all
			// cores (its goroutines' hand-offs and the GC included), where
			// ns/op is the wall time of one call at a time, PostgreSQL's
			// included.
			b.ReportMetric(float64(selfCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func selfCPU(b *testing.B) time.Duration {
	d, err := SelfCPUTime()
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func pickObjectID(b *testing.B, s *Session) string {
	rows, err := s.Env.Store.Find(context.Background(), &query.Query{Class: demo.ClassTicket, Limit: 1000, ReadACL: query.NoACLFilter})
	if err != nil || len(rows) == 0 {
		b.Fatalf("pick an objectId: %v", err)
	}
	id, _ := rows[len(rows)/2][parse.FieldObjectID].(string)
	return id
}

func handlerPost(h http.Handler, session, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	} else if strings.Contains(body, "2026-07-28") {
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "get_object")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func handlerInit(b *testing.B, h http.Handler) string {
	w := handlerPost(h, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	id := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || id == "" {
		b.Fatalf("initialize: HTTP %d %s", w.Code, w.Body.String())
	}
	if w := handlerPost(h, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); w.Code/100 != 2 {
		b.Fatalf("initialized: HTTP %d", w.Code)
	}
	return id
}
