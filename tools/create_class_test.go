package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// The class is created with its fields (and Parse's default ones) and
// can be written to.
func TestCreateClass(t *testing.T) {
	e := admin(t)
	out := e.ok("create_class", map[string]any{"class_name": "Note", "fields": map[string]any{
		"text":   map[string]any{"type": "String", "required": true},
		"ticket": map[string]any{"type": "Pointer", "targetClass": "Ticket"},
	}})
	want := map[string]any{"ACL": "ACL", "createdAt": "Date", "objectId": "String", "updatedAt": "Date", "text": "String (required)", "ticket": "Pointer<Ticket>"}
	if d := cmp.Diff(want, out["schema"].(map[string]any)["fields"]); d != "" {
		t.Fatalf("fields (-want +got):\n%s", d)
	}
	if out["created"] != true || out["class_name"] != "Note" {
		t.Fatalf("%v", out)
	}
	e.ok("create_object", map[string]any{"class_name": "Note", "object": map[string]any{"text": "hi",
		"ticket": map[string]any{"__type": "Pointer", "className": "Ticket", "objectId": t1}}})
	if e.count("Note") != 1 {
		t.Fatal("the new class holds no object")
	}
}

// The omitted operations of class-level permissions are stated public;
// dry_run shows the class and creates nothing.
func TestCreateClassDryRun(t *testing.T) {
	e := admin(t)
	out := e.ok("create_class", map[string]any{"class_name": "Note", "dry_run": true, "class_level_permissions": map[string]any{"find": map[string]any{"role:Staff": true}}})
	clp := out["would_create_class"].(map[string]any)["class_level_permissions"].(map[string]any)
	if !cmp.Equal(clp["find"], map[string]any{"role:Staff": true}) || !cmp.Equal(clp["delete"], map[string]any{"*": true}) {
		t.Fatalf("class_level_permissions: %v", clp)
	}
	e.refused("get_schema", map[string]any{"class_name": "Note"}, classNotFound, `class "Note" was not found`)
	e.refused("create_class", map[string]any{"class_name": "Ticket", "dry_run": true}, tools.CodeInvalidArgument, "class already exists: Ticket")
}

// Schema changes need the admin tier, both schema gates and the master
// key.
func TestCreateClassPermissions(t *testing.T) {
	e := admin(t)
	args := map[string]any{"class_name": "Note"}
	e.as(master(agent.Write)).refused("create_class", args, tools.CodePermissionDenied, "tool create_class needs admin permission; this agent is write")
	e.withGates(agent.Gates{WriteTools: true, RawCRUD: true}).refused("create_class", args, envGate, "PARSEMCP_ALLOW_SCHEMA_OPS=true AND PARSEMCP_ALLOW_RAW_SCHEMA=true")
	err := e.as(asUser(agent.Admin, "uAlice0001")).refused("create_class", args, tools.CodePermissionDenied, "schema changes need an agent acting with the master key")
	if err.Details["kind"] != "master_required" {
		t.Fatalf("details: %v", err.Details)
	}
	e.as(asUser(agent.Admin, "uAlice0001")).refused("create_class", map[string]any{"class_name": "Note", "dry_run": true}, tools.CodePermissionDenied, "schema changes need an agent acting with the master key")
	e.refused("get_schema", args, classNotFound, `class "Note" was not found`)
}

func TestCreateClassArguments(t *testing.T) {
	e := admin(t)
	field := func(spec map[string]any) map[string]any {
		return map[string]any{"class_name": "Bad", "fields": map[string]any{"x": spec}}
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"class_name": "_User"}, "system class _User cannot be created or deleted by an agent"},
		{map[string]any{"class_name": "Ticket"}, "class already exists: Ticket"},
		{map[string]any{"class_name": "1Bad"}, `invalid class name "1Bad"`},
		{map[string]any{}, `argument "class_name" is required`},
		{field(map[string]any{"type": "Money"}), `fields.x: unknown type "Money"`},
		{field(map[string]any{"type": "Pointer"}), "fields.x: a Pointer field needs a targetClass"},
		{field(map[string]any{"type": "String", "targetClass": "Ticket"}), "fields.x: targetClass is only for Pointer and Relation fields"},
		{map[string]any{"class_name": "Bad", "fields": map[string]any{"objectId": map[string]any{"type": "String"}}}, "fields.objectId: objectId is a default field of every class"},
		{map[string]any{"class_name": "Bad", "class_level_permissions": map[string]any{"bogus": 1}}, `argument "class_level_permissions": unknown field "bogus"`},
	} {
		e.refused("create_class", c.args, tools.CodeInvalidArgument, c.want)
	}
}

// A dry run refuses what the create would: a Pointer or Relation to a
// class that does not exist or that the agent cannot see, a class that
// exists; a class pointing to itself is fine. (The dry run used to accept
// a Pointer to a class that does not exist.)
func TestCreateClassDryRunRefusesAsTheCreate(t *testing.T) {
	e := admin(t)
	for _, c := range []struct {
		fields map[string]any
		class  string
		want   string
	}{
		{map[string]any{"ghost": map[string]any{"type": "Pointer", "targetClass": "Ghost"}}, "Note", `field "ghost" points to class "Ghost", which was not found`},
		{map[string]any{"who": map[string]any{"type": "Relation", "targetClass": "Ghost"}}, "Note", `field "who" points to class "Ghost", which was not found`},
		{map[string]any{"s": map[string]any{"type": "Pointer", "targetClass": "_Session"}}, "Note", `field "s" points to class "_Session", which was not found`},
		{nil, "Ticket", "class already exists: Ticket"},
	} {
		for _, dry := range []bool{true, false} {
			e.refused("create_class", map[string]any{"class_name": c.class, "fields": c.fields, "dry_run": dry}, tools.CodeInvalidArgument, c.want)
		}
	}
	e.refused("get_schema", map[string]any{"class_name": "Note"}, classNotFound, `class "Note" was not found`)
	self := map[string]any{"class_name": "Note", "fields": map[string]any{"parent": map[string]any{"type": "Pointer", "targetClass": "Note"}, "project": map[string]any{"type": "Pointer", "targetClass": "Project"}}}
	for _, dry := range []bool{true, false} {
		self["dry_run"] = dry
		e.ok("create_class", self)
	}
}
