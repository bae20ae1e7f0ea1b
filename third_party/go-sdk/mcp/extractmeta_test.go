// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

package mcp

import (
	"encoding/json"
	"reflect"
	"testing"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
)

// extractRequestMetaUnpatched is extractRequestMeta as v1.8.0 has it.
func extractRequestMetaUnpatched(rawParams json.RawMessage) Meta {
	if len(rawParams) == 0 {
		return nil
	}
	var meta struct {
		Meta Meta `json:"_meta"`
	}
	if err := internaljson.Unmarshal(rawParams, &meta); err != nil {
		return nil
	}
	return meta.Meta
}

// The patched extractRequestMeta (PATCHES.md 7) finds the _meta v1.8.0's
// found, for params with and without one, with a key spelled through
// escapes, nested _meta members and invalid params.
func TestExtractRequestMetaAsUnpatched(t *testing.T) {
	inputs := []string{
		``, `{}`, `null`, `[]`, `{"name":"get_object","arguments":{"class_name":"Ticket"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"x"}`,
		`{"name":"x","_meta":{"progressToken":7}}`,
		`{"\u005fmeta":{"progressToken":7}}`,
		`{"name":"a\"b","_met\u0061":{"k":1}}`,
		`{"name":"x","arguments":{"_meta":{"k":1}}}`,
		`{"name":"x","arguments":{"note":"\"_meta\""}}`,
		`{"_meta":null}`, `{"_meta":"x"}`, `{"_meta":{}}`, `{"_META":{"k":1}}`, `{"_meta":{"k":1}`, `not json`,
	}
	for _, in := range inputs {
		got, want := extractRequestMeta(json.RawMessage(in)), extractRequestMetaUnpatched(json.RawMessage(in))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %#v, want %#v", in, got, want)
		}
	}
}
