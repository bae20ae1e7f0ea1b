package agent

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

func perm(p Permission) *Permission { return &p }

func TestNameFilter(t *testing.T) {
	f := NameFilter{Only: []string{"a", "b"}, Except: []string{"b"}}
	for name, want := range map[string]bool{"a": true, "b": false, "c": false} {
		if got := f.Allows(name); got != want {
			t.Errorf("Allows(%q) = %v, want %v", name, got, want)
		}
	}
	m := NameFilter{Only: []string{"close", "Project.archive"}, Except: []string{"Ticket.close"}}
	cases := []struct {
		class, name string
		want        bool
	}{
		{"Ticket", "close", false}, // qualified except wins
		{"Comment", "close", true},
		{"Project", "archive", true},
		{"Ticket", "archive", false}, // qualified only names one class
	}
	for _, c := range cases {
		if got := m.AllowsMethod(c.class, c.name); got != c.want {
			t.Errorf("AllowsMethod(%s, %s) = %v, want %v", c.class, c.name, got, c.want)
		}
	}
	if !(NameFilter{}).Allows("anything") {
		t.Error("zero filter must allow everything")
	}
	if (NameFilter{Only: []string{}}).Allows("x") {
		t.Error("an empty only list allows nothing")
	}
}

func TestSubAgentNarrows(t *testing.T) {
	parent := New(Write, Identity{Mode: AuthUser, UserID: "u1", Roles: []string{"Support"}})
	parent.CorrelationID = "corr-1"
	parent.Policy = Policy{
		Name: "support", TenantID: "org1",
		Tools:   NameFilter{Only: []string{"query_class", "count_objects", "get_object"}},
		Classes: NameFilter{Only: []string{"Ticket", "Comment"}, Except: []string{"Comment"}},
		Filters: []ClassFilters{{"Ticket": {"status": "open"}}},
	}

	child, err := parent.Sub(SubOptions{
		Tools:   NameFilter{Only: []string{"query_class", "delete_object"}},
		Classes: NameFilter{Except: []string{"Order"}},
		Filters: ClassFilters{"Ticket": {"status": "closed"}, DefaultFilterKey: {"archived": false}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if child.Permission != Readonly {
		t.Errorf("default sub-agent permission = %s, want readonly", child.Permission)
	}
	if child.Identity.UserID != "u1" || child.Policy.TenantID != "org1" || child.CorrelationID != "corr-1" {
		t.Errorf("sub-agent did not inherit identity/tenant/correlation: %+v", child)
	}
	if child.Key() != parent.Key() {
		t.Errorf("sub-agent rate-limit principal %q differs from parent's %q", child.Key(), parent.Key())
	}
	if !child.Policy.Tools.Allows("query_class") || child.Policy.Tools.Allows("delete_object") || child.Policy.Tools.Allows("count_objects") {
		t.Errorf("tools not intersected: %+v", child.Policy.Tools)
	}
	if child.Policy.Classes.Allows("Comment") || child.Policy.Classes.Allows("Order") || !child.Policy.Classes.Allows("Ticket") {
		t.Errorf("classes not narrowed: %+v", child.Policy.Classes)
	}
	// Both layers apply: the child cannot replace the parent's filter.
	got := child.FilterFor("Ticket")
	if len(got) != 2 || got[0]["status"] != "open" || got[1]["status"] != "closed" || got[1]["archived"] != false {
		t.Errorf("FilterFor(Ticket) = %v", got)
	}
	if parent.Depth() != DefaultRecursionDepth || child.Depth() != DefaultRecursionDepth-1 {
		t.Errorf("depths: parent %d child %d", parent.Depth(), child.Depth())
	}
}

func TestSubAgentRefusesWidening(t *testing.T) {
	parent := New(Write, Identity{Mode: AuthUser, UserID: "u1", Roles: []string{"Support"}})
	parent.Policy = Policy{TenantID: "org1", Classes: NameFilter{Only: []string{"Ticket"}}}
	cases := map[string]struct {
		opts SubOptions
		want string
	}{
		"higher tier":         {SubOptions{Permission: perm(Admin)}, "exceeds"},
		"another user":        {SubOptions{Identity: &Identity{Mode: AuthUser, UserID: "u2"}}, `holds "u2"`},
		"extra role":          {SubOptions{Identity: &Identity{Mode: AuthRole, Roles: []string{"Admin"}}}, `holds "role:Admin"`},
		"master key":          {SubOptions{Identity: &Identity{Mode: AuthMaster}}, "master key"},
		"another tenant":      {SubOptions{TenantID: "org2"}, "tenant"},
		"disjoint class list": {SubOptions{Classes: NameFilter{Only: []string{"Order"}}}, "shares nothing"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parent.Sub(c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
	// Narrower identity is fine: the role alone, without the user.
	if _, err := parent.Sub(SubOptions{Identity: &Identity{Mode: AuthRole, Roles: []string{"Support"}}}); err != nil {
		t.Errorf("narrower identity refused: %v", err)
	}
}

func TestSubAgentDepthCap(t *testing.T) {
	a := New(Admin, Identity{Mode: AuthMaster})
	for i := 0; i < DefaultRecursionDepth; i++ {
		var err error
		if a, err = a.Sub(SubOptions{}); err != nil {
			t.Fatalf("level %d: %v", i+1, err)
		}
	}
	if _, err := a.Sub(SubOptions{}); !errors.Is(err, ErrRecursionLimit) {
		t.Fatalf("level %d: err = %v, want ErrRecursionLimit", DefaultRecursionDepth+1, err)
	}
	b := New(Admin, Identity{Mode: AuthMaster})
	b.SetDepth(1)
	c, err := b.Sub(SubOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sub(SubOptions{}); !errors.Is(err, ErrRecursionLimit) {
		t.Fatalf("SetDepth(1): second level err = %v", err)
	}
	d := New(Admin, Identity{Mode: AuthMaster})
	d.SetDepth(0)
	if _, err := d.Sub(SubOptions{}); !errors.Is(err, ErrRecursionLimit) {
		t.Fatalf("SetDepth(0): err = %v", err)
	}
}

func TestGates(t *testing.T) {
	cases := []struct {
		g    Gates
		k    GateKind
		want string // "" allowed
	}{
		{Gates{}, GateNone, ""},
		{Gates{}, GateRawCRUD, EnvAllowWriteTools + "=true AND " + EnvAllowRawCRUD + "=true"},
		{Gates{WriteTools: true}, GateRawCRUD, "Required: " + EnvAllowRawCRUD + "=true."},
		{Gates{RawCRUD: true}, GateRawCRUD, "Required: " + EnvAllowWriteTools + "=true."},
		{Gates{WriteTools: true, RawCRUD: true}, GateRawCRUD, ""},
		{Gates{WriteTools: true}, GateMethod, ""},
		{Gates{WriteTools: true}, GateAdminCall, EnvAllowSchemaOps},
		{Gates{SchemaOps: true}, GateRawSchema, EnvAllowRawSchema},
		{Gates{SchemaOps: true, RawSchema: true}, GateRawSchema, ""},
		{Gates{WriteTools: true, RawCRUD: true}, GateRawSchema, EnvAllowSchemaOps + "=true AND " + EnvAllowRawSchema},
	}
	for i, c := range cases {
		err := c.g.Check(c.k, "tool x")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%d: unexpected refusal %v", i, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%d: err = %v, want it to contain %q", i, err, c.want)
		}
	}
	for v, want := range map[string]bool{"Yes": true, "1": true, " on ": true, "TRUE": true, "enabled": false, "": false, "0": false, "no": false} {
		if GateOpen(v) != want {
			t.Errorf("GateOpen(%q) = %v", v, !want)
		}
	}
}

func TestDefaultFilterAppliesWhereItFits(t *testing.T) {
	raw := parseSchema("Ticket", map[string]string{"status": "String", "archived": "Boolean"})
	other := parseSchema("Note", map[string]string{"text": "String"})
	f := ClassFilters{"Ticket": {"status": "open"}, DefaultFilterKey: {"archived": false}}
	e, err := f.parse(query.Parser{}, raw)
	if err != nil {
		t.Fatal(err)
	}
	if and, ok := e.(query.And); !ok || len(and.Exprs) != 2 {
		t.Errorf("Ticket: want own AND default, got %#v", e)
	}
	if e, err := f.parse(query.Parser{}, other); err != nil || e != nil {
		t.Errorf("Note lacks archived: default must not apply, got %#v, %v", e, err)
	}
	bad := ClassFilters{"Note": {"missing": 1}}
	if _, err := bad.parse(query.Parser{}, other); err == nil || !strings.Contains(err.Error(), "agent filter on Note") {
		t.Errorf("a class's own filter that does not fit must fail: %v", err)
	}
}

func parseSchema(class string, fields map[string]string) parse.Schema {
	s := parse.NewSchema(class)
	for k, v := range fields {
		s.Fields[k] = parse.Field{Type: parse.FieldType(v)}
	}
	return s
}

// A tool filter entry ending in "*" names every tool with that prefix (a
// remote agent's tools: "device-d1__*"); sub-agents narrow such entries
// like any other, never widening their parent's.
func TestToolFilterPrefixes(t *testing.T) {
	f := NameFilter{Only: []string{"count_objects", "device-d1__*"}, Except: []string{"device-d1__set_point"}}
	for name, want := range map[string]bool{
		"count_objects": true, "device-d1__read_sensor": true, "device-d1__": true,
		"device-d1__set_point": false, "device-d2__ping": false, "device-d1": false, "query_class": false, "count_objects2": false,
	} {
		if f.Allows(name) != want {
			t.Errorf("Allows(%q) = %v", name, !want)
		}
	}
	deny := NameFilter{Except: []string{"device-d2__*"}}
	if deny.Allows("device-d2__ping") || !deny.Allows("device-d1__ping") || !deny.Allows("query_class") {
		t.Error("an Except prefix")
	}
	parent := New(Admin, Identity{Mode: AuthMaster})
	parent.Policy.Tools = f
	for _, c := range []struct {
		child, want []string
	}{
		{[]string{"device-d1__read_sensor", "device-d2__ping", "query_class"}, []string{"device-d1__read_sensor"}},
		{[]string{"device-*"}, []string{"device-d1__*"}},
		{[]string{"device-d1__r*", "count_objects"}, []string{"device-d1__r*", "count_objects"}},
	} {
		child, err := parent.Sub(SubOptions{Tools: NameFilter{Only: c.child}})
		if err != nil {
			t.Fatalf("%v: %v", c.child, err)
		}
		if !slices.Equal(child.Policy.Tools.Only, c.want) || !slices.Equal(child.Policy.Tools.Except, f.Except) {
			t.Errorf("child %v narrowed to %+v, want only %v", c.child, child.Policy.Tools, c.want)
		}
		if child.Policy.Tools.Allows("device-d1__set_point") || child.Policy.Tools.Allows("device-d2__ping") {
			t.Errorf("child %v widened its parent", c.child)
		}
	}
	if _, err := parent.Sub(SubOptions{Tools: NameFilter{Only: []string{"device-d2__*"}}}); err == nil {
		t.Error("a child filter sharing nothing with its parent's was accepted")
	}
}
