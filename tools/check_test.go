package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// CheckArgs checks an argument against every rule its schema states beyond
// a type, bounds or not: an integer with no bounds must still be a whole
// number; what a schema states nothing about is left to the decoding.
func TestCheckArgsRulesWithoutBounds(t *testing.T) {
	tool := &Tool{Name: "t", Input: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"n":    {Type: "integer"},
		"s":    {Type: "string"},
		"mode": {Type: "string", Enum: []any{"a", "b"}},
	}}}
	for _, c := range []struct {
		args, want string // want: a part of the refusal, "" for none
	}{
		{`{"n":3}`, ""},
		{`{"n":3.5}`, "whole number"},
		{`{"s":7}`, ""},
		{`{"mode":"b"}`, ""},
		{`{"mode":"c"}`, "must be one of"},
	} {
		err := CheckArgs(tool, json.RawMessage(c.args))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a refusal saying %q", c.args, err, c.want)
		}
	}
}
