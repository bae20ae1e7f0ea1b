// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

import (
	"encoding/json"
	"errors"
	"testing"
)

// validRaw appends its text and promises it is valid JSON (parsemcp's
// patch 17, PATCHES.md).
type validRaw string

func (a validRaw) AppendJSON(b []byte) ([]byte, error) { return append(b, a...), nil }
func (a validRaw) MarshalJSON() ([]byte, error)        { return []byte(a), nil }
func (validRaw) AppendsValidJSON()                     {}

// validFunc appends what its function returns, with the same promise.
type validFunc func(b []byte) ([]byte, error)

func (f validFunc) AppendJSON(b []byte) ([]byte, error) { return f(b) }
func (f validFunc) MarshalJSON() ([]byte, error)        { return f(nil) }
func (validFunc) AppendsValidJSON()                     {}

// A result that promises valid JSON is sent as it appends it, unchecked;
// the same text without the promise is checked.
func TestValidAppenderNotChecked(t *testing.T) {
	for _, text := range []string{`{"rows":[1,"a"]}`, `1`, `"s"`} {
		if got, want := encode(t, Int64ID(4), validRaw(text)), encode(t, Int64ID(4), appendRaw(text)); string(got) != string(want) {
			t.Errorf("%s: promised %s, checked %s", text, got, want)
		}
	}
	// Invalid text shows the check is skipped: the promise is the
	// appender's to keep.
	if got := encode(t, Int64ID(4), validRaw(`{"a":`)); string(got) != `{"jsonrpc":"2.0","id":4,"result":{"a":}` {
		t.Errorf("promised, invalid: %s (checked after all?)", got)
	}
	if _, err := NewResponse(Int64ID(4), appendRaw(`{"a":`), nil); err == nil {
		t.Error("not promised, invalid: no error")
	}
}

// The promise covers the text only: an appender that fails, or does not
// append to its argument, makes no response, as one without it.
func TestValidAppenderErrors(t *testing.T) {
	bad := map[string]any{
		"error":      validFunc(func(b []byte) ([]byte, error) { return append(b, `{}`...), errors.New("no") }),
		"own buffer": validFunc(func([]byte) ([]byte, error) { return []byte(`{}`), nil }),
	}
	for name, result := range bad {
		if _, err := NewResponse(Int64ID(1), result, nil); err == nil {
			t.Errorf("%s: no error", name)
		} else if _, ok := err.(*json.MarshalerError); !ok {
			t.Errorf("%s: error %T, want *json.MarshalerError", name, err)
		}
	}
}
