package policy

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

var (
	demoOnce  sync.Once
	demoDir   string
	demoStore store.Store
	demoErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if demoStore != nil {
		demoStore.Close()
	}
	if demoDir != "" {
		os.RemoveAll(demoDir)
	}
	os.Exit(code)
}

// demoDB returns a SQLite store holding a small demo dataset, shared by
// the tests (which only read it, but for the session rows they add).
func demoDB(t *testing.T) store.Store {
	t.Helper()
	demoOnce.Do(func() {
		ctx := context.Background()
		if demoDir, demoErr = os.MkdirTemp("", "policytest"); demoErr != nil {
			return
		}
		var st *sqlite.Store
		if st, demoErr = sqlite.Create(ctx, filepath.Join(demoDir, "demo.sqlite")); demoErr != nil {
			return
		}
		demoStore = st
		_, demoErr = demo.Generate(ctx, st, demo.Options{Rows: 1500})
	})
	if demoErr != nil {
		t.Fatal(demoErr)
	}
	return demoStore
}

func TestDemoPolicyValidates(t *testing.T) {
	ctx := context.Background()
	st := demoDB(t)
	pol, err := Demo()
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Warnings) != 0 {
		t.Errorf("demo warnings: %q", pol.Warnings)
	}
	if err := pol.Validate(ctx, st); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if len(pol.Warnings) != 0 {
		t.Errorf("demo warnings after Validate: %q", pol.Warnings)
	}
	r, err := AuditMetadata(ctx, pol, st)
	if err != nil {
		t.Fatal(err)
	}
	want := Report{
		ClassesAudited:               7,
		MissingClassDescriptions:     []string{},
		MissingFieldDescriptions:     map[string][]string{},
		UnresolvableAllowlistEntries: map[string][]string{},
		CanonicalFilterSummary:       map[string]map[string]any{"Project": {"archived": map[string]any{"$ne": true}}},
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("demo audit (-want +got):\n%s", diff)
	}
	// Every demo status field documents its values.
	for _, c := range []string{demo.ClassProject, demo.ClassTicket, demo.ClassOrder} {
		if len(pol.Catalog.Class(c).Fields["status"].Enum) == 0 {
			t.Errorf("%s.status has no enum", c)
		}
	}
}

func TestDemoAgents(t *testing.T) {
	ctx := context.Background()
	st := demoDB(t)
	pol, err := Demo()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		token, profile string
		perm           agent.Permission
		id             agent.Identity
		tenant         string
	}{
		{"demo-admin", "admin", agent.Admin, agent.Identity{Mode: agent.AuthMaster}, ""},
		{"demo-analyst", "analyst", agent.Readonly, agent.Identity{Mode: agent.AuthRole, Roles: []string{"Manager", "Sales", "Support", "org-acme"}}, demo.OrgAcmeID},
		{"demo-support", "support", agent.Write, agent.Identity{Mode: agent.AuthUser, UserID: demo.SupportUserID, Roles: []string{"Support", "org-acme"}}, demo.OrgAcmeID},
		{"", "analyst", agent.Readonly, agent.Identity{Mode: agent.AuthRole, Roles: []string{"Manager", "Sales", "Support", "org-acme"}}, demo.OrgAcmeID},
	} {
		h := http.Header{}
		if c.token != "" {
			h.Set("Authorization", "Bearer "+c.token)
		}
		name, err := pol.Select(h)
		if err != nil || name != c.profile {
			t.Fatalf("Select(%q) = %q, %v; want %q", c.token, name, err, c.profile)
		}
		a, err := pol.Agent(ctx, name, st, h)
		if err != nil {
			t.Fatalf("Agent(%s): %v", name, err)
		}
		if a.Permission != c.perm || a.Policy.TenantID != c.tenant || a.Policy.Name != name || a.Policy.Catalog != pol.Catalog {
			t.Errorf("%s: permission %s tenant %q name %q catalog %p", name, a.Permission, a.Policy.TenantID, a.Policy.Name, a.Policy.Catalog)
		}
		if diff := cmp.Diff(c.id, a.Identity); diff != "" {
			t.Errorf("%s identity (-want +got):\n%s", name, diff)
		}
	}
	sup, err := pol.Agent(ctx, "support", st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sup.Policy.Tools.Allows("export_data") || !sup.Policy.Tools.Allows("query_class") ||
		sup.Policy.Classes.Allows("Order") || !sup.Policy.Classes.Allows("Ticket") {
		t.Errorf("support filters: tools %+v classes %+v", sup.Policy.Tools, sup.Policy.Classes)
	}
	if got := sup.FilterFor("Ticket"); !cmp.Equal(got, []map[string]any{{"status": map[string]any{"$ne": "closed"}}}) {
		t.Errorf("support Ticket filter = %v", got)
	}
}

// testPolicy is a policy exercising every identity kind and parents.
const testPolicy = `
settings: {recursion_depth: 3}
agents:
  master: {identity: master, permission: admin, tenant: T1, tools: [query_class, count_objects],
           filters: {Ticket: {status: open}}}
  anon: {identity: anonymous}
  by-id: {identity: {user: UAAAAAAAAD}, permission: write}
  by-name: {identity: {user: member}}
  roles: {identity: {roles: [Manager, org-acme]}}
  role: {identity: {role: Support}}
  session: {identity: session, permission: write}
  ghost: {identity: {user: nobody}}
  child:
    parent: master
    permission: write
    tools: {except: [count_objects]}
    filters: {Ticket: {priority: 1}}
  grandchild:
    parent: child
    identity: {roles: [Support]}
  user-child:
    parent: by-id
    identity: {roles: [Support]}
  widening-child:
    parent: by-id
    identity: {roles: [Admin]}
  session-child:
    parent: session
    identity: anonymous
  tight:
    parent: master
    depth: 1
`

func TestAgent(t *testing.T) {
	ctx := context.Background()
	st := demoDB(t)
	pol, err := Parse([]byte(testPolicy), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	// A session for the fixture user "member", and an expired one.
	future := parse.Date(time.Now().Add(time.Hour))
	past := parse.Date(time.Now().Add(-time.Hour))
	if err := st.Create(ctx, parse.ClassSession, []parse.Object{
		{"sessionToken": "r:policy-test-live", "user": parse.Pointer(parse.ClassUser, demo.MemberUserID), "expiresAt": future},
		{"sessionToken": "r:policy-test-expired", "user": parse.Pointer(parse.ClassUser, demo.MemberUserID), "expiresAt": past},
	}); err != nil {
		t.Fatal(err)
	}
	live := http.Header{SessionHeader: {"r:policy-test-live"}}
	expired := http.Header{SessionHeader: {"r:policy-test-expired"}}

	member := agent.Identity{Mode: agent.AuthUser, UserID: demo.MemberUserID, Roles: []string{"org-acme"}}
	support := agent.Identity{Mode: agent.AuthUser, UserID: demo.SupportUserID, Roles: []string{"Support", "org-acme"}}
	memberSession := member
	memberSession.Session = agent.NewSecret("r:policy-test-live") // kept for a store that forwards it
	for _, c := range []struct {
		profile string
		header  http.Header
		perm    agent.Permission
		id      agent.Identity
		depth   int
	}{
		{"master", nil, agent.Admin, agent.Identity{Mode: agent.AuthMaster}, 3},
		{"anon", nil, agent.Readonly, agent.Identity{Mode: agent.AuthAnonymous}, 3},
		{"by-id", nil, agent.Write, support, 3},
		{"by-name", nil, agent.Readonly, member, 3},
		{"roles", nil, agent.Readonly, agent.Identity{Mode: agent.AuthRole, Roles: []string{"Manager", "Sales", "Support", "org-acme"}}, 3},
		{"role", nil, agent.Readonly, agent.Identity{Mode: agent.AuthRole, Roles: []string{"Support"}}, 3},
		{"session", live, agent.Write, memberSession, 3},
		{"child", nil, agent.Write, agent.Identity{Mode: agent.AuthMaster}, 2},
		{"grandchild", nil, agent.Readonly, agent.Identity{Mode: agent.AuthRole, Roles: []string{"Support"}}, 1},
		{"user-child", nil, agent.Readonly, agent.Identity{Mode: agent.AuthRole, Roles: []string{"Support"}}, 2},
		{"session-child", live, agent.Readonly, agent.Identity{Mode: agent.AuthAnonymous}, 2},
		{"tight", nil, agent.Readonly, agent.Identity{Mode: agent.AuthMaster}, 1},
	} {
		t.Run(c.profile, func(t *testing.T) {
			a, err := pol.Agent(ctx, c.profile, st, c.header)
			if err != nil {
				t.Fatal(err)
			}
			if a.Permission != c.perm || a.Depth() != c.depth || a.Policy.Name != c.profile {
				t.Errorf("permission %s depth %d name %q; want %s %d %q", a.Permission, a.Depth(), a.Policy.Name, c.perm, c.depth, c.profile)
			}
			if diff := cmp.Diff(c.id, a.Identity); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
			if (a.Parent() != nil) != (pol.Agents[c.profile].Parent != "") {
				t.Errorf("parent = %v", a.Parent())
			}
		})
	}

	// A child inherits and narrows: tenant, tools, filters (one layer per
	// level).
	child, err := pol.Agent(ctx, "grandchild", st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if child.Policy.TenantID != "T1" || !child.Policy.Tools.Allows("query_class") || child.Policy.Tools.Allows("count_objects") || child.Policy.Tools.Allows("export_data") {
		t.Errorf("grandchild policy: %+v", child.Policy)
	}
	wantFilters := []map[string]any{{"status": "open"}, {"priority": 1.0}}
	if diff := cmp.Diff(wantFilters, child.FilterFor("Ticket")); diff != "" {
		t.Errorf("grandchild filters (-want +got):\n%s", diff)
	}

	// Each call builds a fresh agent with its own copy of the filters.
	a1, _ := pol.Agent(ctx, "master", st, nil)
	a2, _ := pol.Agent(ctx, "master", st, nil)
	if a1.ID == a2.ID {
		t.Error("two agents share an id")
	}
	a1.Policy.Filters[0]["Ticket"]["status"] = "changed"
	if pol.Agents["master"].Filters["Ticket"]["status"] != "open" || a2.Policy.Filters[0]["Ticket"]["status"] != "open" {
		t.Error("agents share filter maps with the policy")
	}

	for _, c := range []struct {
		profile string
		header  http.Header
		want    string
		unauth  bool
	}{
		{"nope", nil, `policy: no agent profile "nope"`, false},
		{"ghost", nil, `policy: agent profile "ghost": no _User with objectId or username "nobody"`, false},
		{"session", nil, `unauthorized: agent profile "session" acts as the session's user; send a Parse session token in the X-Parse-Session-Token header`, true},
		{"session", expired, "unauthorized: session expired", true},
		{"session", http.Header{SessionHeader: {"r:unknown"}}, "unauthorized: invalid session token", true},
		{"session-child", nil, `unauthorized: agent profile "session" acts as the session's user; send a Parse session token in the X-Parse-Session-Token header`, true},
		{"widening-child", nil, `policy: agent profile "widening-child": sub-agent identity holds "role:Admin", which its parent does not`, false},
	} {
		a, err := pol.Agent(ctx, c.profile, st, c.header)
		if err == nil {
			t.Errorf("Agent(%s) = %+v; want error %q", c.profile, a, c.want)
			continue
		}
		if err.Error() != c.want || errors.Is(err, agent.ErrUnauthorized) != c.unauth {
			t.Errorf("Agent(%s): %v (unauthorized %v); want %q (unauthorized %v)", c.profile, err, errors.Is(err, agent.ErrUnauthorized), c.want, c.unauth)
		}
	}
}

func TestValidateErrors(t *testing.T) {
	ctx := context.Background()
	st := demoDB(t)
	for _, c := range []struct {
		name, yaml string
		want       []string
		warnings   []string
	}{
		{"missing class", "classes:\n  Nope: {description: x}\n", []string{"p.yaml:2: classes.Nope: no class Nope in the store"}, nil},
		{"missing fields", "classes:\n  Ticket:\n    agent_fields: [title, titel]\n    join_fields: [title]\n    large_fields: [body]\n    fields: {stat: {description: x}}\n",
			[]string{
				`p.yaml:3: classes.Ticket.agent_fields[1]: no field "titel" on class Ticket`,
				`p.yaml:5: classes.Ticket.large_fields[0]: no field "body" on class Ticket`,
				`p.yaml:6: classes.Ticket.fields.stat: no field "stat" on class Ticket`,
			}, []string{
				`p.yaml:5: classes.Ticket.large_fields: "body" is not in agent_fields, so agents never see it anyway`,
				`p.yaml:6: classes.Ticket.fields.stat: not in agent_fields, so agents never see this field`,
			}},
		{"large pointer", "classes:\n  Ticket: {large_fields: [project]}\n", []string{`p.yaml:2: classes.Ticket.large_fields[0]: "project" is a Pointer field; only fields holding their own value can be large`}, nil},
		{"enum on number", "classes:\n  Ticket:\n    fields: {priority: {enum: [\"1\"]}}\n", []string{`p.yaml:3: classes.Ticket.fields.priority.enum: enum values are strings; "priority" is a Number field`}, nil},
		{"tenant missing", "classes:\n  Ticket: {tenant: {field: tenant}}\n", []string{`p.yaml:2: classes.Ticket.tenant.field: no field "tenant" on class Ticket`}, nil},
		{"tenant type", "classes:\n  Ticket: {tenant: {field: priority}}\n", []string{`p.yaml:2: classes.Ticket.tenant.field: "priority" is a Number field; a tenant field is a String or a Pointer`}, nil},
		{"canonical unknown field", "classes:\n  Project: {canonical_filter: {archvied: {$ne: true}}}\n", []string{`p.yaml:2: classes.Project.canonical_filter.archvied: unknown field "archvied" on class Project`}, nil},
		{"canonical bad operator", "classes:\n  Project: {canonical_filter: {archived: {$gtt: 1}}}\n", []string{`p.yaml:2: classes.Project.canonical_filter.archived.$gtt: unknown operator $gtt`}, nil},
		{"agent filter class", base + "    filters: {Nope: {a: 1}}\n", []string{"p.yaml:4: agents.a.filters.Nope: no class Nope in the store"}, nil},
		{"agent filter bad", base + "    filters: {Ticket: {status: {$in: open}}}\n", []string{`p.yaml:4: agents.a.filters.Ticket.status.$in: takes an array of values, got a string`}, nil},
		{"default no class", base + "    filters: {\":default\": {org: 1, colour: red}}\n", []string{`p.yaml:4: agents.a.filters.:default: no class has every field it names (colour, org)`}, nil},
		{"default bad type", base + "    classes: [Project, Ticket]\n    filters: {\":default\": {org: {$gt: 1}}}\n", []string{
			`p.yaml:5: agents.a.filters.:default.org.$gt: on class Project: ordering comparisons do not apply to Pointer field "org"`,
			`p.yaml:5: agents.a.filters.:default.org.$gt: on class Ticket: ordering comparisons do not apply to Pointer field "org"`,
		}, nil},
		{"default ok", base + "    filters: {\":default\": {$or: [{archived: {$ne: true}}, {org: null}]}}\n    classes: [Project, Organization]\n", nil, nil},
		// Ticket has org but not archived: the agent would be refused it.
		{"default partly fits", base + "    filters: {\":default\": {$or: [{archived: {$ne: true}}, {org: null}]}}\n    classes: [Project, Ticket, Organization]\n", []string{
			`p.yaml:4: agents.a.filters.:default: on class Ticket: the :default filter names "archived", which Ticket lacks, and "org", which constrain it: it can be neither applied nor skipped without widening what the agent sees (give Ticket an entry of its own that overrides "$or")`,
		}, nil},
		{"default overridden where it partly fits", base + "    filters:\n      \":default\": {$or: [{archived: {$ne: true}}, {org: null}], budget: {$gt: 10}}\n      Ticket: {$or: [{status: open}, {org: null}]}\n", []string{
			`p.yaml:5: agents.a.filters.:default: on class Comment: the :default filter names "archived", "budget", which Comment lacks, and "org", which constrain it: it can be neither applied nor skipped without widening what the agent sees (give Comment an entry of its own that overrides "$or")`,
			`p.yaml:5: agents.a.filters.:default: on class Customer: the :default filter names "archived", "budget", which Customer lacks, and "org", which constrain it: it can be neither applied nor skipped without widening what the agent sees (give Customer an entry of its own that overrides "$or")`,
			`p.yaml:5: agents.a.filters.:default: on class Order: the :default filter names "archived", "budget", which Order lacks, and "org", which constrain it: it can be neither applied nor skipped without widening what the agent sees (give Order an entry of its own that overrides "$or")`,
			`p.yaml:5: agents.a.filters.:default: on class Product: the :default filter names "archived", "budget", which Product lacks, and "org", which constrain it: it can be neither applied nor skipped without widening what the agent sees (give Product an entry of its own that overrides "$or")`,
		}, nil},
		{"default bad type under a class entry", base + "    classes: [Project]\n    filters:\n      \":default\": {budget: high, archived: false}\n      Project: {archived: true}\n", []string{
			`p.yaml:6: agents.a.filters.:default.budget: on class Project: Number field "budget" cannot be compared with a string`,
		}, nil},
		{"strict class filter", "settings: {strict_class_filter: true}\n" + base + "    classes: {only: [Ticket, Tickets], except: [Whatever]}\n", []string{"p.yaml:5: agents.a.classes.only[1]: no class Tickets in the store"}, nil},
		{"lenient class filter", base + "    classes: [Ticket, Tickets]\n", nil, []string{"p.yaml:4: agents.a.classes.only[1]: no class Tickets in the store"}},
		{"user missing", "agents:\n  a: {identity: {user: nobody}}\n", []string{`p.yaml:2: agents.a.identity.user: no _User with objectId or username "nobody"`}, nil},
		{"role missing", "agents:\n  a: {identity: {roles: [Support, Wizards]}}\n", []string{`p.yaml:2: agents.a.identity: no role named "Wizards"`}, nil},
		{"method class", "methods:\n  Nope.m: {description: d, update: {a: 1}}\n", []string{"p.yaml:2: methods.Nope.m: no class Nope in the store"}, nil},
		{"method fields", "methods:\n  Project.m: {description: d, update: {archivd: true, members: []}}\n", []string{
			`p.yaml:2: methods.Project.m.update.archivd: no field "archivd" on class Project`,
			`p.yaml:2: methods.Project.m.update.members: "members" is a Relation field; a method template cannot set it`,
		}, nil},
		{"create required", "methods:\n  Ticket.m: {description: d, create: {status: open}}\n", []string{`p.yaml:2: methods.Ticket.m.create: does not set "title", a required field of class Ticket`}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			pol, err := Parse([]byte(c.yaml), testOptions())
			if err != nil {
				t.Fatal(err)
			}
			err = pol.Validate(ctx, st)
			var got []string
			if err != nil {
				var pe *Error
				if !errors.As(err, &pe) {
					t.Errorf("error %T is not a *policy.Error", err)
				}
				got = splitLines(err.Error())
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.warnings, pol.Warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func splitLines(s string) []string { return strings.Split(s, "\n") }

// The complete example of docs/POLICY.md loads without warnings and
// validates against the demo dataset.
func TestDocExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/POLICY.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## A complete example")
	if ok {
		_, rest, ok = strings.Cut(rest, "```yaml\n")
	}
	example, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatal("no yaml block under \"A complete example\" in docs/POLICY.md")
	}
	opts := testOptions()
	opts.Name = "POLICY.md example"
	opts.Funcs = map[string]agent.MethodFunc{"recalc_budget": recalc}
	opts.KnownTools = []string{"query_class", "count_objects", "get_object", "export_data"}
	opts.LookupEnv = func(k string) (string, bool) { return "ops-token", k == "PARSEMCP_OPS_KEY" }
	pol, err := Parse([]byte(example), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := demoDB(t)
	if err := pol.Validate(ctx, st); err != nil {
		t.Fatal(err)
	}
	if len(pol.Warnings) != 0 {
		t.Errorf("warnings: %q", pol.Warnings)
	}
	for token, want := range map[string]string{"ops-token": "ops", "acme-reports-token": "acme-reports", "": "portal"} {
		h := http.Header{}
		if token != "" {
			h.Set("Authorization", "Bearer "+token)
		}
		if got, err := pol.Select(h); err != nil || got != want {
			t.Errorf("Select(%q) = %q, %v; want %q", token, got, err, want)
		}
	}
	triage, err := pol.Agent(ctx, "acme-triage", st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if triage.Depth() != 1 || triage.Policy.TenantID != demo.OrgAcmeID || len(triage.FilterFor("Ticket")) != 2 {
		t.Errorf("acme-triage: depth %d tenant %q Ticket filters %v", triage.Depth(), triage.Policy.TenantID, triage.FilterFor("Ticket"))
	}
}
