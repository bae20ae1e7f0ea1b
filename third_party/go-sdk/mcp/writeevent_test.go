// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

package mcp

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// writeEventUnpatched is writeEvent as v1.8.0 has it: the event built in
// one buffer, payload included, and written at once.
func writeEventUnpatched(w http.ResponseWriter, evt Event) (int, error) {
	var b bytes.Buffer
	if evt.Name != "" {
		fmt.Fprintf(&b, "event: %s\n", evt.Name)
	}
	if evt.ID != "" {
		fmt.Fprintf(&b, "id: %s\n", evt.ID)
	}
	if evt.Retry != "" {
		fmt.Fprintf(&b, "retry: %s\n", evt.Retry)
	}
	b.Grow(len("data: \n\n") + len(evt.Data))
	b.WriteString("data: ")
	b.Write(evt.Data)
	b.WriteString("\n\n")
	n, err := w.Write(b.Bytes())
	_ = http.NewResponseController(w).Flush()
	return n, err
}

// The patched writeEvent (PATCHES.md 6) sends the bytes v1.8.0's sent and
// reports the same count, for every kind of event and a large payload.
func TestWriteEventAsUnpatched(t *testing.T) {
	events := []Event{
		{Name: "message", Data: []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)},
		{Name: "message", ID: "0_3", Data: []byte(`{"jsonrpc":"2.0","method":"notifications/progress"}`)},
		{Name: "prime", ID: "0_1"},
		{Name: "close", Retry: "500"},
		{Data: []byte("x")},
		{},
		{Name: "message", ID: "s_9", Data: []byte(`{"result":"` + strings.Repeat("row,", 60000) + `"}`)},
	}
	for i, e := range events {
		got, want := httptest.NewRecorder(), httptest.NewRecorder()
		gn, gerr := writeEvent(got, e)
		wn, werr := writeEventUnpatched(want, e)
		if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) || gn != wn || (gerr == nil) != (werr == nil) {
			t.Errorf("event %d: wrote %d bytes (%v) %.80q…, want %d (%v) %.80q…", i, gn, gerr, got.Body.Bytes(), wn, werr, want.Body.Bytes())
		}
		if !got.Flushed {
			t.Errorf("event %d: not flushed", i)
		}
	}
}
