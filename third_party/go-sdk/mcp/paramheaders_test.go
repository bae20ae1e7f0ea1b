// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The patched server reads a tool's x-mcp-header bindings once, when the
// tool is added (PATCHES.md 8): the bindings are those v1.8.0 read from
// the schema on every call, and validateMcpHeaders answers as v1.8.0 did.
func TestParamHeadersAsUnpatched(t *testing.T) {
	schemas := map[string]string{
		"none":   `{"type":"object","properties":{"plain":{"type":"string"}}}`,
		"empty":  `{"type":"object"}`,
		"flat":   `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"plain":{"type":"string"}}}`,
		"nested": `{"type":"object","properties":{"opt":{"type":"object","properties":{"deep":{"type":"boolean","x-mcp-header":"Deep"},"more":{"type":"object","properties":{"id":{"type":"string","x-mcp-header":"Id"}}}}},"top":{"type":"string","x-mcp-header":"Top"}}}`,
	}
	s := NewServer(&Implementation{Name: "t", Version: "1"}, nil)
	handler := func(context.Context, *CallToolRequest) (*CallToolResult, error) { return &CallToolResult{}, nil }
	for name, schema := range schemas {
		s.AddTool(&Tool{Name: name, InputSchema: json.RawMessage(schema)}, handler)
	}
	sorted := func(b []paramHeaderBinding) []string {
		var out []string
		for _, x := range b {
			out = append(out, strings.Join(x.Path, ".")+"="+x.Header)
		}
		slices.Sort(out)
		return out
	}
	for name := range schemas {
		st, ok := s.getServerTool(name)
		if !ok {
			t.Fatalf("%s: not added", name)
		}
		if got, want := sorted(st.paramHeaders), sorted(extractParamHeaderAnnotations(st.tool)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: bindings %v, want %v", name, got, want)
		}
	}
	// Calls with at most one header out of line (several would be
	// reported in the schema's map order, which is random in both).
	calls := []struct {
		tool, args string
		headers    map[string]string
	}{
		{"none", `{"plain":"x"}`, nil},
		{"flat", `{"region":"eu","n":3}`, map[string]string{"Region": "eu", "N": "3"}},
		{"flat", `{"region":"eu","n":3}`, map[string]string{"Region": "us", "N": "3"}},
		{"flat", `{"region":"eu","n":3}`, map[string]string{"N": "3"}},
		{"flat", `{"n":3}`, map[string]string{"Region": "eu", "N": "3"}},
		{"flat", `{"region":"eu","n":3.5}`, map[string]string{"Region": "eu", "N": "3.5"}},
		{"flat", `{"region":null,"n":1}`, map[string]string{"N": "1"}},
		{"nested", `{"opt":{"deep":true,"more":{"id":"a"}},"top":"t"}`, map[string]string{"Deep": "true", "Id": "a", "Top": "t"}},
		{"nested", `{"opt":{"deep":true,"more":{"id":"a"}},"top":"t"}`, map[string]string{"Deep": "false", "Id": "a", "Top": "t"}},
		{"nested", `{"opt":{"deep":true},"top":"t"}`, map[string]string{"Deep": "true", "Top": "t"}},
		{"nested", `{"opt":{"deep":true,"more":{"id":{"x":1}}},"top":"t"}`, map[string]string{"Deep": "true", "Id": "a", "Top": "t"}},
		{"empty", `{}`, nil},
	}
	for _, c := range calls {
		h := http.Header{}
		h.Set(protocolVersionHeader, protocolVersion20260728)
		h.Set(methodHeader, "tools/call")
		h.Set(nameHeader, c.tool)
		for k, v := range c.headers {
			h.Set(paramHeaderPrefix+k, v)
		}
		req := &jsonrpc.Request{Method: "tools/call", Params: json.RawMessage(fmt.Sprintf(`{"name":%q,"arguments":%s}`, c.tool, c.args))}
		got := validateMcpHeaders(h, req, s.getServerTool)
		st, _ := s.getServerTool(c.tool)
		want := validateParamHeaders(h, req, extractParamHeaderAnnotations(st.tool)) // v1.8.0: the schema read on every call
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s %s %v: got %v, want %v", c.tool, c.args, c.headers, got, want)
		}
	}
}
