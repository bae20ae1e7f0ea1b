// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"encoding/json"
	"math/rand"
	"testing"
)

// The patched protocol-version lookup of the Streamable HTTP transport
// (PATCHES.md 11) finds the version v1.8.0's lookup through the whole
// _meta found: a corpus of valid, mistyped, duplicated, escaped and
// invalid params, and random mutations of them.
func TestRequestMetaVersionAsUnpatched(t *testing.T) {
	corpus := []string{
		``, `{}`, `null`, `[]`, `5`, `not json`, `{"_meta":`,
		`{"name":"get_object","arguments":{"class_name":"Ticket"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"x"}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":5}}`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":null}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":{"a":1}}}`, `{"_meta":{"io.modelcontextprotocol/protocolversion":"2026-07-28"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolVersion":"b"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolVersion":7}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/protocolVersion":"a"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocol\u0056ersion":"2026-07-28"}}`, `{"\u005fmeta":{"io.modelcontextprotocol/protocolVersion":"v"}}`,
		`{"_meta":null}`, `{"_meta":"s"}`, `{"_meta":[1]}`, `{"_meta":{}}`, `{"_META":{"io.modelcontextprotocol/protocolVersion":"v"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"v"},"_meta":"s"}`, `{"_meta":"s","_meta":{"io.modelcontextprotocol/protocolVersion":"v"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"v","other":[1,{"x":null}]}}`, `{"arguments":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v"}}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"v"}} trailing`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"v\"w"}}`,
	}
	check := func(in string) {
		t.Helper()
		want, _ := extractRequestMeta(json.RawMessage(in))[MetaKeyProtocolVersion].(string)
		if got := requestMetaVersion(json.RawMessage(in)); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
	for _, in := range corpus {
		check(in)
	}
	mutations(corpus, `{}[]:,"\ 0123456789.-+eEtrufalsn_metaioVvx/`, 50000, func(_ *rand.Rand, text string) { check(text) })
}
