// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"encoding/json"
	"math/rand"
	"testing"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
)

// extractNameUnpatched is extractName's tools/call case as v1.8.0 has it.
func extractNameUnpatched(params json.RawMessage) (string, bool) {
	var p CallToolParams
	if err := internaljson.Unmarshal(params, &p); err == nil {
		return p.Name, true
	}
	return "", false
}

// The patched extractName (PATCHES.md 10) gives v1.8.0's answer for
// tools/call params: a corpus of valid, mistyped, escaped, duplicated and
// invalid params, and random mutations of them.
func TestExtractNameAsUnpatched(t *testing.T) {
	corpus := []string{
		``, `{}`, `null`, `[]`, `5`, `"x"`, `not json`, `{"name":"get_object"`,
		`{"name":"get_object","arguments":{"class_name":"Ticket","object_id":"abc"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"get_object","arguments":{"class_name":"Ticket"}}`,
		`{"name":"x","_meta":null}`, `{"name":"x","_meta":"s"}`, `{"name":"x","_meta":[1]}`, `{"name":"x","_meta":5}`,
		`{"name":"x","_meta":{"a":1},"_meta":"s"}`, `{"name":"x","_meta":"s","_meta":{}}`,
		`{"name":5}`, `{"name":null}`, `{"name":"a","name":"b"}`, `{"name":"a","name":7}`, `{"name":7,"name":"a"}`,
		`{"name":"x","requestState":5}`, `{"name":"x","requestState":"s"}`, `{"name":"x","requestState":null}`,
		`{"name":"x","inputResponses":{"k":{}}}`, `{"name":"x","inputResponses":5}`, `{"name":"x","inputResponses":{"k":5}}`,
		`{"name":"x","arguments":5}`, `{"name":"x","arguments":null}`, `{"name":"x","arguments":[1,{"_meta":2}]}`,
		`{"n\u0061me":"x"}`, `{"name":"a\"b"}`, `{"\u005fmeta":"s","name":"x"}`, `{"NAME":"x"}`, `{"Name":"x"}`,
		`{"name":"x"} trailing`, `{"name":"x"}{"name":"y"}`, ` {"name" : "x" , "_meta" : { } } `,
		`{"name":"x","arguments":{"_meta":"s"},"_meta":{}}`, `{"\u005fmeta":"s","_meta":{},"name":"x"}`,
		`{"name":"x","inputRe\u0073ponses":5}`, `{"name":"x","inputRe\u0073ponses":{"k":{}}}`, `{"name":"x","extra":{"deep":[1,2,{"a":null}]}}`,
	}
	check := func(in string) {
		t.Helper()
		gotName, gotOK := extractName("tools/call", json.RawMessage(in))
		wantName, wantOK := extractNameUnpatched(json.RawMessage(in))
		if gotName != wantName || gotOK != wantOK {
			t.Errorf("%q: got (%q, %v), want (%q, %v)", in, gotName, gotOK, wantName, wantOK)
		}
	}
	for _, in := range corpus {
		check(in)
	}
	// Mutations: bytes replaced, dropped or inserted, drawn from JSON's
	// own alphabet so that many stay valid.
	mutations(corpus, `{}[]:,"\ 0123456789.-+eEtrufalsn_metanamerequestStateinputResponsesx`, 50000, func(_ *rand.Rand, text string) { check(text) })
}
