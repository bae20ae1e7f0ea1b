// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// appendRaw appends its text, and marshals to it (parsemcp's patch 12,
// PATCHES.md).
type appendRaw string

func (a appendRaw) AppendJSON(b []byte) ([]byte, error) { return append(b, a...), nil }
func (a appendRaw) MarshalJSON() ([]byte, error)        { return []byte(a), nil }

// appendPtr is appendRaw through a pointer.
type appendPtr struct{ s string }

func (a *appendPtr) AppendJSON(b []byte) ([]byte, error) { return append(b, a.s...), nil }
func (a *appendPtr) MarshalJSON() ([]byte, error)        { return []byte(a.s), nil }

// appendOnly has an AppendJSON method and is no Marshaler.
type appendOnly struct{ S string }

func (a appendOnly) AppendJSON(b []byte) ([]byte, error) { return append(b, `"other"`...), nil }

// appendFunc appends what its function returns.
type appendFunc func(b []byte) ([]byte, error)

func (f appendFunc) AppendJSON(b []byte) ([]byte, error) { return f(b) }
func (f appendFunc) MarshalJSON() ([]byte, error)        { return f(nil) }

func encode(t *testing.T, id ID, result any) []byte {
	t.Helper()
	resp, err := NewResponse(id, result, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := EncodeMessage(resp)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A result that appends its JSON is sent as the same bytes as the same
// text given by a Marshaler, whatever the id.
func TestAppendedResponseAsMarshaler(t *testing.T) {
	ids := []ID{Int64ID(7), Int64ID(-1), Int64ID(1 << 60), StringID("a\"b<>&\u2028"), StringID(""), {}}
	texts := []string{`{"a":[1,"<&>"],"b":{}}`, `"x"`, `[true,null]`, `0`, ` {"padded":1} `, "\n[]\t"}
	for _, id := range ids {
		for _, text := range texts {
			got := encode(t, id, appendRaw(text))
			want := encode(t, id, rawMarshaler(text))
			if !bytes.Equal(got, want) {
				t.Errorf("id %v text %q:\n got  %s\n want %s", id.value, text, got, want)
			}
			if got := encode(t, id, &appendPtr{text}); !bytes.Equal(got, want) {
				t.Errorf("id %v text %q, pointer:\n got  %s\n want %s", id.value, text, got, want)
			}
		}
	}
}

// A type with an AppendJSON method but no MarshalJSON is encoded as
// encoding/json encodes it, as before.
func TestAppendOnlyNotAMarshaler(t *testing.T) {
	if got := string(encode(t, Int64ID(1), appendOnly{"x"})); got != `{"jsonrpc":"2.0","id":1,"result":{"S":"x"}}` {
		t.Errorf("got %s", got)
	}
}

// What EncodeMessage returns has no spare capacity: appending to it (as
// the stdio transport appends a newline) cannot write into what a later
// call returns.
func TestAppendedResponseNoSpareCapacity(t *testing.T) {
	resp, err := NewResponse(Int64ID(1), appendRaw(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	first, err := EncodeMessage(resp)
	if err != nil {
		t.Fatal(err)
	}
	first = append(first, '\n')
	second, err := EncodeMessage(resp)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(second, 'X')
	if string(first) != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Errorf("the first encoding became %q", first)
	}
}

// The response is sent in the buffer the result was appended to: no copy.
func TestAppendedResponseNotCopied(t *testing.T) {
	var appended []byte
	result := appendFunc(func(b []byte) ([]byte, error) {
		appended = append(b, `{"rows":[1,2,3]}`...)
		return appended, nil
	})
	data := encode(t, Int64ID(3), result)
	if want := `{"jsonrpc":"2.0","id":3,"result":{"rows":[1,2,3]}}`; string(data) != want {
		t.Fatalf("got %s, want %s", data, want)
	}
	if &data[0] != &appended[0] {
		t.Error("the response was copied out of the buffer its result was appended to")
	}
}

// A response changed after it was made is sent as it is then: its id, its
// result (replaced or changed in place) or its error.
func TestAppendedResponseChangedAfter(t *testing.T) {
	general := func(resp *Response) []byte {
		wire := wireCombined{VersionTag: wireVersion}
		resp.marshal(&wire)
		b, err := jsonMarshal(&wire)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	changes := map[string]func(*Response){
		"int id":          func(r *Response) { r.ID = Int64ID(8) },
		"string id":       func(r *Response) { r.ID = StringID("7") },
		"replaced":        func(r *Response) { r.Result = json.RawMessage(`[1]`) },
		"same length":     func(r *Response) { r.Result = json.RawMessage(`456`) },
		"shortened":       func(r *Response) { r.Result = r.Result[:2] },
		"appended to":     func(r *Response) { r.Result = append(r.Result, '4') },
		"copied":          func(r *Response) { r.Result = append(json.RawMessage(nil), r.Result...) },
		"changed inplace": func(r *Response) { r.Result[2] = '4' },
		"error":           func(r *Response) { r.Error = errors.New("failed") },
	}
	for name, change := range changes {
		resp, err := NewResponse(Int64ID(7), appendRaw(`123`), nil)
		if err != nil {
			t.Fatal(err)
		}
		change(resp)
		got, err := EncodeMessage(resp)
		if err != nil {
			t.Fatal(err)
		}
		if want := general(resp); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got  %s\n want %s", name, got, want)
		}
	}
}

// An appender that fails, appends invalid JSON or does not append to its
// argument makes no response, as a failing Marshaler does; a nil pointer
// is encoded as encoding/json encodes it (null); a response with an error
// is not appended.
func TestAppendedResponseErrors(t *testing.T) {
	bad := map[string]any{
		"error":      appendFunc(func(b []byte) ([]byte, error) { return b, errors.New("no") }),
		"invalid":    appendRaw(`{"a":`),
		"empty":      appendRaw(``),
		"own buffer": appendFunc(func([]byte) ([]byte, error) { return []byte(`{}`), nil }),
	}
	for name, result := range bad {
		if _, err := NewResponse(Int64ID(1), result, nil); err == nil {
			t.Errorf("%s: no error", name)
		} else if _, ok := err.(*json.MarshalerError); !ok {
			t.Errorf("%s: error %T, want *json.MarshalerError", name, err)
		}
	}
	if got := encode(t, Int64ID(1), (*appendPtr)(nil)); string(got) != `{"jsonrpc":"2.0","id":1,"result":null}` {
		t.Errorf("nil pointer: %s", got)
	}
	resp, err := NewResponse(Int64ID(1), appendRaw(`{}`), errors.New("failed"))
	if err != nil || resp.wire != nil {
		t.Errorf("with an error: %v, wire %q", err, resp.wire)
	}
	// An appender that changes the head it was given in place (against
	// its contract) does not change what is sent.
	changer := appendFunc(func(b []byte) ([]byte, error) { b[len(b)-3] = 'T'; return append(b, `1`...), nil })
	if got := encode(t, Int64ID(1), changer); string(got) != `{"jsonrpc":"2.0","id":1,"result":1}` {
		t.Errorf("head changed: %s", got)
	}
}
