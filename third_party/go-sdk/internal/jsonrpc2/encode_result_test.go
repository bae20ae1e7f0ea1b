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
