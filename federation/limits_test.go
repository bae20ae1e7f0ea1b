package federation

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// nested returns an input schema whose property "p" holds an object
// schema with a property "p" … levels deep (two JSON levels each).
func nested(levels int) string {
	inner := `{"type":"string"}`
	for range levels {
		inner = `{"type":"object","properties":{"p":` + inner + `}}`
	}
	return inner
}

// deepArray returns an object schema nested exactly levels deep (its
// property x an array of arrays).
func deepArray(levels int) string {
	return `{"type":"object","x":` + strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1) + `}`
}

func manyKeys(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":{"type":"string"}`, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// TestToolValidation is the table of what an agent's tool list may hold:
// each row is one tool offered alone; a refused one is left out with the
// reason, and what is kept is what the MCP SDK accepts (FuzzRemoteToolList
// checks that with the SDK itself).
func TestToolValidation(t *testing.T) {
	long := strings.Repeat("x", MaxDescriptionBytes+1)
	for _, c := range []struct {
		name, tool string
		reason     string // "" when kept
	}{
		{"minimal", `{"name":"a"}`, ""},
		{"zod draft-07", `{"name":"a","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"number","minimum":1}},"required":["n"],"additionalProperties":false}}`, ""},
		{"local $ref", `{"name":"a","inputSchema":{"type":"object","properties":{"x":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}}`, ""},
		{"nesting at the limit", `{"name":"a","inputSchema":` + nested(MaxSchemaDepth/2-1) + `}`, ""},
		{"exactly at the limit", `{"name":"a","inputSchema":` + deepArray(MaxSchemaDepth) + `}`, ""},
		{"one level past the limit", `{"name":"a","inputSchema":` + deepArray(MaxSchemaDepth+1) + `}`, "nested deeper"},
		{"3,000 levels (the crash)", `{"name":"a","inputSchema":{"type":"object","x":` + strings.Repeat("[", 3000) + strings.Repeat("]", 3000) + `}}`, "nested deeper"},
		{"nesting past the limit", `{"name":"a","inputSchema":` + nested(MaxSchemaDepth/2+1) + `}`, "nested deeper"},
		{"keys at the limit", `{"name":"a","inputSchema":` + manyKeys(MaxSchemaKeys) + `}`, ""},
		{"too many keys", `{"name":"a","inputSchema":` + manyKeys(MaxSchemaKeys+1) + `}`, "more than 1000 keys"},
		{"long key", `{"name":"a","inputSchema":{"type":"object","properties":{"` + strings.Repeat("k", MaxKeyBytes+1) + `":{}}}}`, "longer than 256 bytes"},
		{"schema too large", `{"name":"a","inputSchema":{"type":"object","description":"` + strings.Repeat("d", MaxSchemaBytes) + `"}}`, "bytes (limit 65536)"},
		{"input not an object", `{"name":"a","inputSchema":{"type":"string"}}`, `type "object"`},
		{"input an array", `{"name":"a","inputSchema":[1]}`, "JSON object"},
		{"output not an object", `{"name":"a","outputSchema":"x"}`, "output schema must be a JSON object"},
		{"output too deep", `{"name":"a","outputSchema":` + nested(MaxSchemaDepth) + `}`, "nested deeper"},
		{"remote $ref (never fetched)", `{"name":"a","inputSchema":{"type":"object","properties":{"x":{"$ref":"http://127.0.0.1:1/x.json"}}}}`, "input schema"},
		{"bad pattern", `{"name":"a","inputSchema":{"type":"object","properties":{"x":{"type":"string","pattern":"(?<=a)b"}}}}`, "input schema"},
		{"long description", `{"name":"a","description":"` + long + `"}`, "description is"},
		{"long title", `{"name":"a","title":"` + strings.Repeat("t", MaxTitleBytes+1) + `"}`, "title is"},
		{"long annotation title", `{"name":"a","annotations":{"title":"` + strings.Repeat("t", MaxTitleBytes+1) + `"}}`, "annotation title is"},
		{"bad name", `{"name":"a b"}`, "not a valid MCP tool name"},
		{"long name", `{"name":"` + strings.Repeat("n", 129) + `"}`, "not a valid MCP tool name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := json.RawMessage(`{"tools":[` + c.tool + `]}`)
			tools, skipped, _, err := decodeToolList(raw, 10)
			if err != nil {
				t.Fatal(err)
			}
			if c.reason == "" {
				if len(tools) != 1 || len(skipped) != 0 {
					t.Fatalf("want the tool kept; skipped: %v", skipped)
				}
				if err := tools[0].CheckArguments(nil); err != nil && !strings.Contains(c.tool, "required") {
					t.Fatalf("no arguments: %v", err)
				}
				return
			}
			if len(tools) != 0 || len(skipped) != 1 || !strings.Contains(skipped[0].Error(), c.reason) {
				t.Fatalf("want the tool left out for %q; kept %d, skipped %v", c.reason, len(tools), skipped)
			}
		})
	}
}

func TestToolListDuplicateNames(t *testing.T) {
	tools, skipped, _, err := decodeToolList(json.RawMessage(`{"tools":[{"name":"a","description":"first"},{"name":"a","description":"second"}]}`), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools[0].Description != "first" || len(skipped) != 1 || !strings.Contains(skipped[0].Error(), "listed twice") {
		t.Fatalf("tools %+v, skipped %v", tools, skipped)
	}
}

// TestCheckArguments is the table of arguments checked against a remote
// tool's own input schema before anything is sent to its agent.
func TestCheckArguments(t *testing.T) {
	tools, skipped, _, err := decodeToolList(json.RawMessage(`{"tools":[{"name":"set","inputSchema":{"type":"object",
		"properties":{"n":{"type":"integer","minimum":1,"maximum":10},"mode":{"enum":["a","b"]},"tags":{"type":"array","items":{"type":"string"},"maxItems":2}},
		"required":["n"],"additionalProperties":false}}]}`), 10)
	if err != nil || len(skipped) != 0 {
		t.Fatal(err, skipped)
	}
	tool := tools[0]
	for _, c := range []struct {
		args string
		ok   bool
		want string
	}{
		{`{"n":3}`, true, ""},
		{`{"n":3,"mode":"b","tags":["x","y"]}`, true, ""},
		{``, false, "n"},
		{`{}`, false, "n"},
		{`{"n":"3"}`, false, "n"},
		{`{"n":2.5}`, false, "n"},
		{`{"n":11}`, false, "n"},
		{`{"n":3,"mode":"c"}`, false, "mode"},
		{`{"n":3,"tags":["x","y","z"]}`, false, "tags"},
		{`{"n":3,"tags":[1]}`, false, "tags"},
		{`{"n":3,"extra":true}`, false, "extra"},
		{`[1]`, false, ""},
		{`{"n":3,"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, false, "nested deeper"},
		{`{"n":`, false, "not JSON"},
	} {
		err := tool.CheckArguments(json.RawMessage(c.args))
		if c.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("arguments %.60s: got %v, want ok=%v (mentioning %q)", c.args, err, c.ok, c.want)
		}
	}
	var unchecked Tool
	if unchecked.CheckArguments(json.RawMessage(`{}`)) == nil {
		t.Fatal("a tool that was never validated accepted arguments")
	}
}

func TestPayloadDepth(t *testing.T) {
	deep := `{"id":"abc","result":{"content":[],"structuredContent":` + strings.Repeat("[", MaxPayloadDepth) + strings.Repeat("]", MaxPayloadDepth) + `}}`
	r, err := decodeResponse([]byte(deep), DefaultMaxPayload)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := checkCallResult(r.Result); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("a tool result nested %d levels: %v", MaxPayloadDepth+1, err)
	}
	// Brackets inside strings do not count.
	flat := `{"id":"abc","result":{"content":[{"type":"text","text":"` + strings.Repeat(`[{\"`, 500) + `"}]}}`
	if r, err := decodeResponse([]byte(flat), DefaultMaxPayload); err != nil {
		t.Fatalf("brackets in a string: %v", err)
	} else if _, _, err := checkCallResult(r.Result); err != nil {
		t.Fatalf("brackets in a string: %v", err)
	}
	for _, p := range []string{
		`{"status":"online","name":"` + strings.Repeat("n", MaxTitleBytes+1) + `"}`,
		`{"status":"online","revision":"` + strings.Repeat("r", MaxTitleBytes+1) + `"}`,
	} {
		if _, err := decodePresence([]byte(p), DefaultMaxPayload); err == nil {
			t.Errorf("presence %.50s… accepted", p)
		}
	}
}
