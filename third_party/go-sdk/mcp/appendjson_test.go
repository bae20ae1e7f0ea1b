// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// checkAppend holds x.AppendJSON to x.MarshalJSON: the same bytes after
// the prefix it was given, or an error where MarshalJSON fails.
func checkAppend(t *testing.T, name string, x *CallToolResult) {
	t.Helper()
	want, werr := x.MarshalJSON()
	prefix := []byte(`{"head":`)
	got, gerr := x.AppendJSON(bytes.Clone(prefix))
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%s: AppendJSON error %v, MarshalJSON error %v", name, gerr, werr)
	}
	if werr != nil {
		return
	}
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("%s: AppendJSON lost its prefix: %q", name, got)
	}
	if g := got[len(prefix):]; !bytes.Equal(g, want) {
		t.Fatalf("%s: AppendJSON\n%s\nMarshalJSON\n%s", name, g, want)
	}
}

func withType(r *CallToolResult, rt resultType) *CallToolResult {
	r.setResultType(rt)
	return r
}

func TestCallToolResultAppendJSON(t *testing.T) {
	text := func(s ...string) []Content {
		var c []Content
		for _, s := range s {
			c = append(c, &TextContent{Text: s})
		}
		return c
	}
	// fast is true where the result is one appendCommon writes itself.
	cases := []struct {
		name string
		r    *CallToolResult
		fast bool
	}{
		{"nil content", &CallToolResult{}, true},
		{"empty content", &CallToolResult{Content: []Content{}}, true},
		{"one text", &CallToolResult{Content: text(`{"a":1}`)}, true},
		{"two texts", &CallToolResult{Content: text("a", "")}, true},
		{"escaped text", &CallToolResult{Content: text("q\"b\\n\n<>&\u2028é\x00\xff")}, true},
		{"structured", &CallToolResult{Content: text("x"), StructuredContent: json.RawMessage(`{"a":[1,"b"]}`)}, true},
		{"structured string", &CallToolResult{Content: text("x"), StructuredContent: json.RawMessage(`"placeholder-0a"`)}, true},
		{"structured spaced", &CallToolResult{StructuredContent: json.RawMessage(`{ "a" : 1 }`)}, false},
		{"structured html", &CallToolResult{StructuredContent: json.RawMessage(`{"a":"<b>"}`)}, false},
		{"structured unicode", &CallToolResult{StructuredContent: json.RawMessage(`{"a":"é\u2028"}`)}, false},
		{"structured invalid", &CallToolResult{StructuredContent: json.RawMessage(`{"a":`)}, false},
		{"structured empty", &CallToolResult{StructuredContent: json.RawMessage{}}, false},
		{"structured typed nil", &CallToolResult{StructuredContent: json.RawMessage(nil)}, false},
		{"structured map", &CallToolResult{StructuredContent: map[string]any{"a": 1}}, false},
		{"structured struct", &CallToolResult{StructuredContent: struct{ A int }{1}}, false},
		{"error", &CallToolResult{Content: text("boom"), IsError: true}, true},
		{"request state", &CallToolResult{Content: text("x"), RequestState: "s1"}, true},
		{"request state escaped", &CallToolResult{RequestState: "a\"<é"}, true},
		{"complete", withType(&CallToolResult{Content: text("x"), IsError: true, RequestState: "s"}, resultTypeComplete), true},
		{"input required", withType(&CallToolResult{RequestState: "s"}, resultTypeInputRequired), true},
		{"meta", &CallToolResult{Meta: Meta{"k": "v"}, Content: text("x")}, false},
		{"empty meta", &CallToolResult{Meta: Meta{}, Content: text("x")}, true},
		{"server info", &CallToolResult{Meta: Meta{MetaKeyServerInfo: &Implementation{Name: "s", Version: "1"}}, Content: text("x")}, true},
		{"server info full", withType(&CallToolResult{Meta: Meta{MetaKeyServerInfo: &Implementation{Name: "s<", Title: "T é", Description: "d\"", Version: "", WebsiteURL: "https://x/?a&b"}}}, resultTypeComplete), true},
		{"server info icons", &CallToolResult{Meta: Meta{MetaKeyServerInfo: &Implementation{Name: "s", Icons: []Icon{{Source: "https://x/i.png"}}}}}, false},
		{"server info nil", &CallToolResult{Meta: Meta{MetaKeyServerInfo: (*Implementation)(nil)}}, false},
		{"server info value", &CallToolResult{Meta: Meta{MetaKeyServerInfo: Implementation{Name: "s"}}}, false},
		{"server info and more", &CallToolResult{Meta: Meta{MetaKeyServerInfo: &Implementation{Name: "s"}, "a": 1}}, false},
		{"input requests", withType(&CallToolResult{InputRequests: InputRequestMap{}}, resultTypeInputRequired), false},
		{"text meta", &CallToolResult{Content: []Content{&TextContent{Text: "x", Meta: Meta{"k": 1}}}}, false},
		{"text annotations", &CallToolResult{Content: []Content{&TextContent{Text: "x", Annotations: &Annotations{Priority: 1}}}}, false},
		{"image", &CallToolResult{Content: []Content{&TextContent{Text: "x"}, &ImageContent{Data: []byte("p"), MIMEType: "image/png"}}}, false},
	}
	for _, c := range cases {
		checkAppend(t, c.name, c.r)
		if _, ok := c.r.appendCommon(nil); ok != c.fast {
			t.Errorf("%s: written without reflection %v, want %v", c.name, ok, c.fast)
		}
	}
}

// TestCallToolResultAppendJSONRandom holds AppendJSON to MarshalJSON on
// random results: texts and states drawn from bytes each escaped its own
// way, structured content from valid and invalid JSON texts.
func TestCallToolResultAppendJSONRandom(t *testing.T) {
	const alphabet = "az09 \"\\/<>&\n\t\x00\x1f\x7f"
	runes := []string{"é", "\x80", "\u2028", "\u2029", "\U0001F600", "\xff", "\xe2\x80"}
	rng := rand.New(rand.NewSource(1))
	str := func() string {
		var sb strings.Builder
		for n := rng.Intn(12); n > 0; n-- {
			if rng.Intn(5) == 0 {
				sb.WriteString(runes[rng.Intn(len(runes))])
			} else {
				sb.WriteByte(alphabet[rng.Intn(len(alphabet))])
			}
		}
		return sb.String()
	}
	structured := []string{`1`, `"s"`, `[]`, `{}`, `{"a":[1,2,{"b":null}]}`, `[true,false]`, `"<"`, `">"`, `{"a":"&"}`, `{"a": 1}`, `[1,]`, `"é"`, `nul`}
	for i := 0; i < 20000; i++ {
		r := &CallToolResult{IsError: rng.Intn(2) == 0}
		switch rng.Intn(4) {
		case 0:
		case 1:
			r.Content = []Content{}
		default:
			for n := 1 + rng.Intn(3); n > 0; n-- {
				r.Content = append(r.Content, &TextContent{Text: str()})
			}
		}
		if rng.Intn(2) == 0 {
			r.StructuredContent = json.RawMessage(structured[rng.Intn(len(structured))])
		}
		if rng.Intn(3) == 0 {
			r.RequestState = str()
		}
		if rng.Intn(3) == 0 {
			info := &Implementation{Name: str(), Version: str()}
			if rng.Intn(2) == 0 {
				info.Title, info.Description, info.WebsiteURL = str(), str(), str()
			}
			r.Meta = Meta{MetaKeyServerInfo: info}
		}
		switch rng.Intn(3) {
		case 1:
			r.setResultType(resultTypeComplete)
		case 2:
			r.setResultType(resultTypeInputRequired)
		}
		checkAppend(t, "random", r)
	}
}
