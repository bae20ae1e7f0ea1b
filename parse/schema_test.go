package parse_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/parse"
)

// Each operation reads its own permission; an operation the CLP does not
// name (an unknown one, or one left out of a stored CLP) is open to the
// master key only, as Parse Server 9 fills it with {}.
func TestCLPPerm(t *testing.T) {
	perm := func(e string) *parse.OpPerm { return &parse.OpPerm{Entries: map[string]bool{e: true}} }
	c := parse.CLP{Get: perm("get"), Find: perm("find"), Count: perm("count"), Create: perm("create"),
		Update: perm("update"), Delete: perm("delete"), AddField: perm("addField")}
	for _, op := range []parse.Op{parse.OpGet, parse.OpFind, parse.OpCount, parse.OpCreate, parse.OpUpdate, parse.OpDelete, parse.OpAddField} {
		p := c.Perm(op)
		if p == nil || !p.Entries[string(op)] || len(p.Entries) != 1 {
			t.Errorf("Perm(%s) = %+v", op, p)
		}
	}
	anyone := parse.Principal{UserID: "u1", Entries: []string{"*", "u1", "role:Admin", "get", "find", "erase", "GET"}}
	for _, op := range []parse.Op{"", "erase", "GET"} {
		if d := c.Decide(op, anyone); d.Allowed {
			t.Errorf("Decide(%q) = %+v, want refused", op, d)
		}
		if d := c.Decide(op, parse.Principal{Master: true}); !d.Allowed {
			t.Errorf("Decide(%q) as master refused", op)
		}
	}
	partial := parse.CLP{Get: &parse.OpPerm{Entries: map[string]bool{"*": true}}}
	if d := partial.Decide(parse.OpFind, anyone); d.Allowed {
		t.Errorf("find left out of a stored CLP = %+v, want master only", d)
	}
	if d := (parse.CLP{}).Decide(parse.OpFind, parse.Principal{Entries: []string{"*"}}); !d.Allowed {
		t.Errorf("no CLP stored refused find, want public")
	}
}

// The CLP's JSON is Parse Server's _SCHEMA form and round-trips.
func TestCLPJSON(t *testing.T) {
	js := `{"find":{"*":true,"requiresAuthentication":true},"get":{"pointerFields":["owner"],"role:Admin":true},` +
		`"count":{},"protectedFields":{"*":["email"]},"readUserFields":["owner"]}`
	var c parse.CLP
	if err := json.Unmarshal([]byte(js), &c); err != nil {
		t.Fatal(err)
	}
	want := parse.CLP{
		Find:            &parse.OpPerm{Entries: map[string]bool{"*": true}, RequiresAuthentication: true},
		Get:             &parse.OpPerm{Entries: map[string]bool{"role:Admin": true}, PointerFields: []string{"owner"}},
		Count:           &parse.OpPerm{Entries: map[string]bool{}},
		ProtectedFields: map[string][]string{"*": {"email"}},
		ReadUserFields:  []string{"owner"},
	}
	if d := cmp.Diff(want, c); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back parse.CLP
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, back); d != "" {
		t.Fatalf("round trip of %s (-want +got):\n%s", b, d)
	}
	for _, bad := range []string{`{"find":{"requiresAuthentication":"yes"}}`, `{"find":{"pointerFields":"owner"}}`, `{"find":{"*":1}}`, `{"find":[]}`} {
		if err := json.Unmarshal([]byte(bad), new(parse.CLP)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// Sessions are master-key only: every operation admits nobody.
func TestSystemSchemasSessionClosed(t *testing.T) {
	for _, s := range parse.SystemSchemas() {
		if s.ClassName != parse.ClassSession {
			continue
		}
		for _, op := range []parse.Op{parse.OpGet, parse.OpFind, parse.OpCount, parse.OpCreate, parse.OpUpdate, parse.OpDelete, parse.OpAddField} {
			p := s.CLP.Perm(op)
			if p == nil || len(p.Entries) != 0 || p.RequiresAuthentication || len(p.PointerFields) != 0 {
				t.Errorf("_Session %s: %+v, want nobody", op, p)
			}
		}
		return
	}
	t.Fatal("no _Session schema")
}

func TestSchemaValidate(t *testing.T) {
	ok := parse.NewSchema("Ticket")
	ok.Fields["owner"] = parse.Field{Type: parse.TypePointer, TargetClass: "_User"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]parse.Schema{
		"class name": {ClassName: "1Ticket"},
		"field name": {ClassName: "T", Fields: map[string]parse.Field{"a-b": {Type: parse.TypeString}}},
		"field type": {ClassName: "T", Fields: map[string]parse.Field{"a": {Type: "Money"}}},
		"ACL field":  {ClassName: "T", Fields: map[string]parse.Field{"a": {Type: parse.TypeACL}}},
		"no target":  {ClassName: "T", Fields: map[string]parse.Field{"a": {Type: parse.TypePointer}}},
		"bad target": {ClassName: "T", Fields: map[string]parse.Field{"a": {Type: parse.TypeRelation, TargetClass: "no such"}}},
	}
	for name, s := range bad {
		if err := s.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
