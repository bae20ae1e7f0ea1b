// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The fast path of EncodeMessage writes a result response byte for byte
// as the general path does (parsemcp's patch, PATCHES.md).
func TestEncodeResultAsGeneralPath(t *testing.T) {
	for _, id := range []ID{Int64ID(7), Int64ID(-1), StringID("a\"b<>&\u2028"), StringID("")} {
		for _, result := range []any{map[string]any{"text": "<b>&\u2028", "n": 1}, []int{}, "s", nil, json.RawMessage(`{"a":[1,2]}`)} {
			resp, err := NewResponse(id, result, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := EncodeMessage(resp)
			if err != nil {
				t.Fatal(err)
			}
			wire := wireCombined{VersionTag: wireVersion}
			resp.marshal(&wire)
			want, err := jsonMarshal(&wire)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("id %v result %v:\n got  %s\n want %s", id, result, got, want)
			}
		}
	}
}

type rawMarshaler string

func (r rawMarshaler) MarshalJSON() ([]byte, error) { return []byte(r), nil }

type ptrMarshaler struct{ s string }

func (p *ptrMarshaler) MarshalJSON() ([]byte, error) { return []byte(p.s), nil }

// A Marshaler's compact output is taken as it is (the bytes encoding/json
// would give), an invalid one is an error as in encoding/json, and a nil
// pointer Marshaler is encoded as encoding/json encodes it (null).
func TestMarshalerRawAsEncodingJSON(t *testing.T) {
	for _, m := range []any{rawMarshaler(`{"a":[1,"<&>"],"b":{}}`), rawMarshaler(`"x"`), &ptrMarshaler{`[true,null]`}} {
		got, err := marshalToRaw(m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsonMarshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%v: got %s, want %s", m, got, want)
		}
	}
	if _, err := marshalToRaw(rawMarshaler(`{"a":`)); err == nil {
		t.Error("an invalid Marshaler output was accepted")
	}
	var nilPtr *ptrMarshaler
	if got, err := marshalToRaw(nilPtr); err != nil || string(got) != "null" {
		t.Errorf("nil pointer Marshaler: %s %v", got, err)
	}
}
