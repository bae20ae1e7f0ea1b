// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"encoding/json"
	"unicode/utf8"
)

// AppendJSON appends to b the JSON text MarshalJSON returns for x.
//
// The common result (text content blocks without metadata or annotations,
// structured content that is already compact JSON text or absent, no
// input requests, no _meta but the server information the SDK adds at
// 2026-07-28) is written directly, without reflection; any other
// result is appended from MarshalJSON. The JSON-RPC layer sends a result
// with this method in its own buffer.
func (x *CallToolResult) AppendJSON(b []byte) ([]byte, error) {
	if out, ok := x.appendCommon(b); ok {
		return out, nil
	}
	m, err := x.MarshalJSON()
	if err != nil {
		return b, err
	}
	return append(b, m...), nil
}

// appendCommon appends x as MarshalJSON writes it (the wire struct's
// fields in their order: _meta, content, structuredContent, isError,
// requestState, resultType, inputRequests) when x is a result it can
// write without reflection: no input requests, no _meta but the server's
// own name, text blocks only. ok is false otherwise, and b is then
// returned as it was given.
func (x *CallToolResult) appendCommon(b []byte) (_ []byte, ok bool) {
	if x.InputRequests != nil {
		return b, false
	}
	// At 2026-07-28 the server names itself in every result's _meta
	// (annotateServerInfo); any other _meta is left to MarshalJSON.
	var info *Implementation
	if len(x.Meta) > 0 {
		i, isInfo := x.Meta[MetaKeyServerInfo].(*Implementation)
		if len(x.Meta) > 1 || !isInfo || i == nil || len(i.Icons) > 0 {
			return b, false
		}
		info = i
	}
	var structured json.RawMessage
	switch s := x.StructuredContent.(type) {
	case nil:
	case json.RawMessage:
		// encoding/json compacts a RawMessage (escaping <, > and &): its
		// bytes are sent as they are only where that changes nothing.
		if s == nil || !compactSafe(s) || !json.Valid(s) {
			return b, false
		}
		structured = s
	default:
		return b, false
	}
	start := len(b)
	b = append(b, '{')
	if info != nil {
		b = append(b, `"_meta":{"`+MetaKeyServerInfo+`":`...)
		b = appendImplementation(b, info)
		b = append(b, "},"...)
	}
	b = append(b, `"content":`...)
	if x.Content == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, c := range x.Content {
			t, isText := c.(*TextContent)
			if !isText || t == nil || len(t.Meta) > 0 || t.Annotations != nil {
				return b[:start], false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"text","text":`...)
			b = appendJSONString(b, t.Text)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if structured != nil {
		b = append(b, `,"structuredContent":`...)
		b = append(b, structured...)
	}
	if x.IsError {
		b = append(b, `,"isError":true`...)
	}
	if x.RequestState != "" {
		b = append(b, `,"requestState":`...)
		b = appendJSONString(b, x.RequestState)
	}
	if x.resultType != "" {
		b = append(b, `,"resultType":`...)
		b = appendJSONString(b, string(x.resultType))
	}
	return append(b, '}'), true
}

// appendImplementation appends i, which has no icons, as encoding/json
// writes it.
func appendImplementation(b []byte, i *Implementation) []byte {
	b = append(b, `{"name":`...)
	b = appendJSONString(b, i.Name)
	if i.Title != "" {
		b = append(b, `,"title":`...)
		b = appendJSONString(b, i.Title)
	}
	if i.Description != "" {
		b = append(b, `,"description":`...)
		b = appendJSONString(b, i.Description)
	}
	b = append(b, `,"version":`...)
	b = appendJSONString(b, i.Version)
	if i.WebsiteURL != "" {
		b = append(b, `,"websiteUrl":`...)
		b = appendJSONString(b, i.WebsiteURL)
	}
	return append(b, '}')
}

// appendJSONString appends s as encoding/json writes a string: bytes that
// need no escape as they are, any other string through json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) {
			m, err := json.Marshal(s) // a string cannot fail to encode
			if err != nil {
				panic(err)
			}
			return append(b, m...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainByte reports whether encoding/json writes c, within a string, as
// it is: printable ASCII but the quote, the backslash and the three bytes
// it escapes for HTML.
func plainByte(c byte) bool {
	return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

// compactSafe reports whether compacting the JSON text s with HTML
// escaping (what encoding/json does to a RawMessage) leaves it as it is:
// it holds no whitespace, no byte past ASCII and none of <, > and &.
func compactSafe(s []byte) bool {
	for _, c := range s {
		if c <= ' ' || c >= utf8.RuneSelf || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
