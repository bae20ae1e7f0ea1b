// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

package mcp

import (
	"encoding/json"
	"fmt"
	"testing"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// readBatchUnpatched is readBatch as v1.8.0 has it: the array decode tried
// first for every input.
func readBatchUnpatched(data []byte) (msgs []jsonrpc.Message, isBatch bool, _ error) {
	var rawBatch []json.RawMessage
	if err := internaljson.Unmarshal(data, &rawBatch); err == nil {
		if len(rawBatch) == 0 {
			return nil, true, fmt.Errorf("empty batch")
		}
		for _, raw := range rawBatch {
			msg, err := jsonrpc2.DecodeMessage(raw)
			if err != nil {
				return nil, true, err
			}
			msgs = append(msgs, msg)
		}
		return msgs, true, nil
	}
	msg, err := jsonrpc2.DecodeMessage(data)
	return []jsonrpc.Message{msg}, false, err
}

// The patched readBatch (PATCHES.md 4) answers every input as v1.8.0's
// did: the same messages, the same batch flag, the same error.
func TestReadBatchAsUnpatched(t *testing.T) {
	inputs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		"  \n\t{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		` [{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`[]`, `null`, `[1,`, `{"jsonrpc":"2.0","id":1`, `{}`, `"x"`, `7`, ``, `   `,
		`{"jsonrpc":"2.0","id":1,"method":"ping"} trailing`,
	}
	for _, in := range inputs {
		gotMsgs, gotBatch, gotErr := readBatch([]byte(in))
		wantMsgs, wantBatch, wantErr := readBatchUnpatched([]byte(in))
		got, want := encoded(gotMsgs), encoded(wantMsgs)
		if gotBatch != wantBatch || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || got != want {
			t.Errorf("%q: got (%s, %v, %v), want (%s, %v, %v)", in, got, gotBatch, gotErr, want, wantBatch, wantErr)
		}
	}
}

// encoded is msgs as the wire has them, one per line.
func encoded(msgs []jsonrpc.Message) string {
	out := ""
	for _, m := range msgs {
		if m == nil {
			out += "nil\n"
			continue
		}
		b, err := jsonrpc2.EncodeMessage(m)
		out += fmt.Sprintf("%s %v\n", b, err)
	}
	return out
}
