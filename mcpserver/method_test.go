package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/query"
)

// ticketCatalog declares methods on Ticket: update (close, retitle),
// create (open_ticket) and Go ones (summary, purge).
func ticketCatalog(t *testing.T) *agent.Catalog {
	t.Helper()
	resolve := func(s *jsonschema.Schema) *jsonschema.Resolved {
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	titleParams := &jsonschema.Schema{Type: "object", Required: []string{"title"},
		Properties:           map[string]*jsonschema.Schema{"title": {Type: "string", MinLength: jsonschema.Ptr(1)}},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	methods := []*agent.Method{
		{Class: "Ticket", Name: "close", Description: "Close the ticket.", Permission: agent.Write, Instance: true,
			Kind: agent.MethodUpdate, Set: map[string]any{"status": "closed"}, SupportsDryRun: true},
		{Class: "Ticket", Name: "retitle", Description: "Rename the ticket.", Permission: agent.Write, Instance: true,
			Kind: agent.MethodUpdate, Parameters: titleParams, Resolved: resolve(titleParams), Set: map[string]any{"title": map[string]any{"$arg": "title"}}},
		{Class: "Ticket", Name: "open_ticket", Description: "Open a new ticket.", Permission: agent.Write,
			Kind: agent.MethodCreate, Parameters: titleParams, Resolved: resolve(titleParams),
			Set: map[string]any{"title": map[string]any{"$arg": "title"}, "status": "open"}, SupportsDryRun: true},
		{Class: "Ticket", Name: "summary", Description: "Count the tickets.", Permission: agent.Readonly, Kind: agent.MethodGo,
			Func: func(ctx context.Context, call *agent.MethodCall) (any, error) {
				n, err := call.Scope.Count(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Ticket"})
				if err != nil {
					return nil, err
				}
				return map[string]any{"tickets": n, "dry_run": call.DryRun}, nil
			}},
		{Class: "Ticket", Name: "purge", Description: "Delete the ticket for good.", Permission: agent.Admin, Instance: true,
			Kind: agent.MethodGo, Destructive: true, SupportsDryRun: true,
			Func: func(ctx context.Context, call *agent.MethodCall) (any, error) {
				if call.DryRun {
					return map[string]any{"would_delete": call.ObjectID}, nil
				}
				if _, err := call.Scope.Delete(ctx, "Ticket", call.ObjectID); err != nil {
					return nil, err
				}
				return map[string]any{"deleted": call.ObjectID}, nil
			}},
	}
	cat := &agent.Catalog{Methods: map[string]*agent.Method{}}
	for _, m := range methods {
		cat.Methods[m.QualifiedName()] = m
	}
	return cat
}

func TestCallMethod(t *testing.T) {
	st := fixtureStore(t)
	m := connect(t, newServer(t, st, agent.Readonly, master), "")
	cat := ticketCatalog(t)
	writeGate := agent.Gates{WriteTools: true}
	bobW := govClient(t, st, writeGate, agent.Write, bobID, agent.Policy{Catalog: cat})

	t.Run("update method", func(t *testing.T) {
		out := ok(t, bobW, "call_method", map[string]any{"class_name": "Ticket", "method_name": "close", "object_id": "t000000003"})
		if out["method"] != "close" || out["result"].(map[string]any)["updated"].(map[string]any)["status"] != "closed" {
			t.Fatalf("close: %v", out)
		}
		if got := readObject(t, m, "Ticket", "t000000003"); got["status"] != "closed" || got["title"] != "Ice survey" {
			t.Fatalf("read back: %v", got)
		}
		ok(t, bobW, "call_method", map[string]any{"class_name": "Ticket", "method_name": "retitle", "object_id": "t000000003", "arguments": map[string]any{"title": "Ice survey 2"}})
		if got := readObject(t, m, "Ticket", "t000000003"); got["title"] != "Ice survey 2" {
			t.Fatalf("retitle read back: %v", got)
		}
	})

	t.Run("create method", func(t *testing.T) {
		out := ok(t, bobW, "call_method", map[string]any{"class_name": "Ticket", "method_name": "open_ticket", "arguments": map[string]any{"title": "From a method"}})
		id := out["result"].(map[string]any)["created"].(map[string]any)["objectId"].(string)
		if got := readObject(t, m, "Ticket", id); got["title"] != "From a method" || got["status"] != "open" {
			t.Fatalf("read back: %v", got)
		}
	})

	t.Run("go method", func(t *testing.T) {
		// a readonly method needs neither a write tier nor a gate
		ro := govClient(t, st, agent.Gates{}, agent.Readonly, bobID, agent.Policy{Catalog: cat})
		if !has(listed(t, ro), "call_method") {
			t.Fatal("call_method not listed for a readonly agent")
		}
		out := ok(t, ro, "call_method", map[string]any{"class_name": "Ticket", "method_name": "summary"})
		n := ok(t, ro, "count_objects", map[string]any{"class_name": "Ticket"})["count"]
		if d := cmp.Diff(map[string]any{"tickets": n, "dry_run": false}, out["result"]); d != "" {
			t.Fatalf("summary runs in the agent's scope (-want +got):\n%s", d)
		}
		root := govClient(t, st, agent.Gates{WriteTools: true, SchemaOps: true}, agent.Admin, master, agent.Policy{Catalog: cat})
		out = ok(t, root, "call_method", map[string]any{"class_name": "Ticket", "method_name": "purge", "object_id": "t000000004"})
		if out["result"].(map[string]any)["deleted"] != "t000000004" || readObject(t, m, "Ticket", "t000000004") != nil {
			t.Fatalf("purge: %v", out)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		ro := govClient(t, st, allGates, agent.Readonly, bobID, agent.Policy{Catalog: cat})
		closed := govClient(t, st, agent.Gates{RawCRUD: true, RawSchema: true, SchemaOps: true}, agent.Write, bobID, agent.Policy{Catalog: cat})
		adminW := govClient(t, st, writeGate, agent.Admin, master, agent.Policy{Catalog: cat})
		except := govClient(t, st, allGates, agent.Admin, bobID, agent.Policy{Catalog: cat, Methods: agent.NameFilter{Except: []string{"close"}}})
		only := govClient(t, st, allGates, agent.Admin, bobID, agent.Policy{Catalog: cat, Methods: agent.NameFilter{Only: []string{"Ticket.summary"}}})
		closeArgs := map[string]any{"class_name": "Ticket", "method_name": "close", "object_id": "t000000001"}
		dryClose := map[string]any{"class_name": "Ticket", "method_name": "close", "object_id": "t000000001", "dry_run": true}
		before := readObject(t, m, "Ticket", "t000000001")
		for _, args := range []map[string]any{closeArgs, dryClose} {
			refused(t, ro, "call_method", args, "permission_denied", "permission_tier", "method Ticket.close needs write permission; this agent is readonly")
			refused(t, closed, "call_method", args, "access_denied", "env_gate", "method Ticket.close is disabled by the operator. Required: PARSEMCP_ALLOW_WRITE_TOOLS=true.")
			refused(t, except, "call_method", args, "tool_filtered", "method_filtered", "method Ticket.close is not available to this agent")
			refused(t, only, "call_method", args, "tool_filtered", "method_filtered", "method Ticket.close is not available to this agent")
		}
		refused(t, bobW, "call_method", map[string]any{"class_name": "Ticket", "method_name": "purge", "object_id": "t000000001"}, "permission_denied", "permission_tier", "method Ticket.purge needs admin permission; this agent is write")
		refused(t, adminW, "call_method", map[string]any{"class_name": "Ticket", "method_name": "purge", "object_id": "t000000001", "dry_run": true}, "access_denied", "env_gate", "method Ticket.purge is disabled by the operator. Required: PARSEMCP_ALLOW_SCHEMA_OPS=true.")
		ok(t, only, "call_method", map[string]any{"class_name": "Ticket", "method_name": "summary"})
		unchanged(t, m, "Ticket", "t000000001", before)

		for _, tc := range []struct {
			args map[string]any
			code string
			msg  string
		}{
			{map[string]any{"class_name": "Ticket", "method_name": "close"}, "invalid_argument", "method Ticket.close acts on one object: give a valid object_id"},
			{map[string]any{"class_name": "Ticket", "method_name": "open_ticket", "object_id": "t000000001", "arguments": map[string]any{"title": "x"}}, "invalid_argument", "method Ticket.open_ticket is a class method: it takes no object_id"},
			{map[string]any{"class_name": "Ticket", "method_name": "nope"}, "invalid_argument", `class Ticket declares no method "nope"`},
			{map[string]any{"class_name": "Ticket"}, "invalid_argument", `argument "method_name" is required`},
			{map[string]any{"class_name": "Nope", "method_name": "close"}, "access_denied", `class "Nope" was not found (or is not accessible to this agent)`},
			{map[string]any{"class_name": "_Session", "method_name": "close"}, "access_denied", `class "_Session" was not found (or is not accessible to this agent)`},
			// a row bob cannot write is not found
			{map[string]any{"class_name": "Ticket", "method_name": "close", "object_id": "t000000005"}, "not_found", "Object not found: Ticket#t000000005"},
		} {
			refused(t, bobW, "call_method", tc.args, tc.code, "", tc.msg)
		}
		for _, bad := range []map[string]any{{"title": 5}, {}, {"title": ""}, {"title": "x", "extra": 1}} {
			out := fails(t, bobW, "call_method", map[string]any{"class_name": "Ticket", "method_name": "retitle", "object_id": "t000000001", "arguments": bad}, "invalid_argument")
			if !strings.HasPrefix(out["error"].(string), "arguments of Ticket.retitle: ") {
				t.Errorf("arguments %v: %v", bad, out["error"])
			}
		}
		unchanged(t, m, "Ticket", "t000000001", before)
	})

	t.Run("dry run", func(t *testing.T) {
		before := readObject(t, m, "Ticket", "t000000001")
		count := ok(t, m, "count_objects", map[string]any{"class_name": "Ticket"})["count"]
		// supports_dry_run: the method's own preview; both spellings of the flag
		for _, args := range []map[string]any{
			{"class_name": "Ticket", "method_name": "close", "object_id": "t000000001", "dry_run": true},
			{"class_name": "Ticket", "method_name": "close", "object_id": "t000000001", "arguments": map[string]any{"dry_run": true}},
		} {
			out := ok(t, bobW, "call_method", args)
			want := map[string]any{"object_id": "t000000001", "before": map[string]any{"status": "open"}, "after": map[string]any{"status": "closed"}}
			if out["dry_run"] != true || out["supports_real_dry_run"] != true || !cmp.Equal(want, out["would_update"]) {
				t.Fatalf("close dry run: %v", out)
			}
			if args := out["would_call"].(map[string]any)["args"]; !cmp.Equal(args, map[string]any{}) {
				t.Fatalf("dry_run must not be passed on as an argument: %v", args)
			}
		}
		out := ok(t, bobW, "call_method", map[string]any{"class_name": "Ticket", "method_name": "open_ticket", "arguments": map[string]any{"title": "Maybe"}, "dry_run": true})
		if !cmp.Equal(out["would_create"], map[string]any{"title": "Maybe", "status": "open"}) {
			t.Fatalf("open_ticket dry run: %v", out)
		}
		// without supports_dry_run: a structural preview, the method is not run
		out = ok(t, bobW, "call_method", map[string]any{"class_name": "Ticket", "method_name": "retitle", "object_id": "t000000001", "arguments": map[string]any{"title": "Renamed"}, "dry_run": true})
		if out["supports_real_dry_run"] != false || out["note"] == nil || !cmp.Equal(out["would_call"].(map[string]any)["args"], map[string]any{"title": "Renamed"}) {
			t.Fatalf("retitle dry run: %v", out)
		}
		// a Go method that supports it gets the flag
		root := govClient(t, st, agent.Gates{WriteTools: true, SchemaOps: true}, agent.Admin, master, agent.Policy{Catalog: cat})
		out = ok(t, root, "call_method", map[string]any{"class_name": "Ticket", "method_name": "purge", "object_id": "t000000001", "dry_run": true})
		if !cmp.Equal(out["result"], map[string]any{"would_delete": "t000000001"}) {
			t.Fatalf("purge dry run: %v", out)
		}
		// argument validation runs in a dry run too
		fails(t, bobW, "call_method", map[string]any{"class_name": "Ticket", "method_name": "retitle", "object_id": "t000000001", "arguments": map[string]any{"title": 5}, "dry_run": true}, "invalid_argument")
		unchanged(t, m, "Ticket", "t000000001", before)
		if n := ok(t, m, "count_objects", map[string]any{"class_name": "Ticket"})["count"]; n != count {
			t.Fatalf("a dry run wrote: %v → %v tickets", count, n)
		}
	})
}
