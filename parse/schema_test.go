package parse_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/parse"
)

// Each operation reads its own permission; an operation the CLP does not
// know is closed (a zero value fails closed), a missing one nil (left
// out: public with no CLP stored, master key only in a stored one; see
// CLP.Decide).
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
	for _, op := range []parse.Op{"", "erase", "GET"} {
		p := c.Perm(op)
		if p == nil || len(p.Entries) != 0 || p.RequiresAuthentication || len(p.PointerFields) != 0 {
			t.Errorf("Perm(%q) = %+v, want a permission that admits nobody", op, p)
		}
	}
	if p := (parse.CLP{}).Perm(parse.OpFind); p != nil {
		t.Errorf("no find permission = %+v, want nil (left out)", p)
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
