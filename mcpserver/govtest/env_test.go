package govtest

import (
	"context"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/policy"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/parserest"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/sqlite"
	"github.com/parsemcp/parsemcp/tools"
)

// demoRows is the size of the dataset each backend gets.
const demoRows = 600

// The fixture ids of the demo dataset (demo/demo.go) the cases use.
const (
	acme    = demo.OrgAcmeID
	globex  = demo.OrgGlobexID
	initech = demo.OrgInitechID

	ticketNoACL      = demo.TicketNoACLID
	ticketPublicRead = demo.TicketPublicReadID
	ticketOrg        = demo.TicketOrgID
	ticketMember     = demo.TicketMemberID
	ticketSupport    = demo.TicketSupportID
	ticketMasterOnly = demo.TicketMasterOnlyID
	projectWebsite   = demo.ProjectWebsiteID

	missingTicket = "TZZZZZZZZZ" // no such ticket
)

// Secret markers planted in the data: an answer may contain one only when
// the agent may read it (see secretsOf).
const (
	markMasterOnly = "SECRET-MASTER-ONLY-TICKET" // title of the {} ticket
	markGlobex     = "SECRET-GLOBEX-TICKET"      // title of a public Globex ticket
	markGlobexOpen = "SECRET-GLOBEX-OPEN"        // title of a public read+write Globex ticket
	markBudget     = "987654321"                 // Project.budget of the Website project (protected)
	markEmail      = "secret-email-marker@leak.example"
	markTag        = "SECRET-TAG-MARKER"        // Ticket.tags, outside the test policy's agent_fields
	memberSession  = "r:member-session-SECRET"  // a valid session token of user "member"
	expiredSession = "r:expired-session-SECRET" // an expired one
)

// Roles planted to form a cycle: CycleB inherits CycleA (CycleB's roles
// relation holds CycleA), CycleC inherits CycleB and CycleA inherits CycleC.
var cycleRoles = map[string]string{"CycleA": "RCycleA000", "CycleB": "RCycleB000", "CycleC": "RCycleC000"}

// env is one backend with the demo data, the planted markers and both
// policies.
type env struct {
	name    string
	st      store.Store
	demoPol *policy.Policy
	testPol *policy.Policy
	// vars are the placeholders (@NAME@) the cases' arguments use, with
	// their values in this dataset.
	vars map[string]string
	// parse is the Parse Server behind the parserest backend (nil for
	// the others).
	parse *parseserver.Server
}

// difference is a case a backend cannot serve: the request must be
// refused with code and a message containing msg, for the reason why.
func sqliteEnv(t *testing.T) *env {
	st, err := sqlite.Create(context.Background(), filepath.Join(t.TempDir(), "govattack.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newEnv(t, "sqlite", st)
}

func postgresEnv(t *testing.T) *env {
	st, err := postgres.Create(context.Background(), pgtest.Schema(t, "govattack"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newEnv(t, "postgres", st)
}

// parserestEnv is a Parse Server 9 (on PostgreSQL, LiveQuery on) reached
// through store/parserest: the demo is loaded through its REST API, and
// Parse Server enforces the ACLs and class-level permissions itself.
func parserestEnv(t *testing.T) *env {
	srv := parseserver.Start(t, parseserver.Options{CustomObjectIDs: true, AcceptAuthData: []string{"google", "apple", "github"}})
	st, err := parserest.Open(context.Background(), parserest.Config{ServerURL: srv.URL(), AppID: srv.AppID(), MasterKey: srv.MasterKey(), Scratch: sqlite.Scratch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newEnv(t, "parserest", st)
	e.parse = srv
	e.actAsRoleUsers(t)
	return e
}

// roleUsers are the users the parserest backend's role-only profiles act
// as: Parse Server grants roles only to a user's session, so a profile
// holding roles without a user has no REST equivalent (parsemcp refuses it
// at start-up; TestRoleOnlyProfilesRefusedOnParseServer). Each planted
// user holds exactly the profile's roles and appears in no row's ACL, so
// it reads what the role-only profile reads on the SQL stores and every
// expectation of the table stays the same.
var roleUsers = []struct {
	id, name string
	roles    []string
	// profiles names the profiles, as "policy/profile", and the identity
	// line each has in its policy's text.
	profiles map[string]string
}{
	{"UGovMgrOrg", "gov-manager-org", []string{"Manager", "org-acme"}, map[string]string{
		"demo/analyst":  "    identity: {roles: [Manager, org-acme]}\n    tenant: OAAAAAAAAB\n    keys: [{key: demo-analyst}]",
		"test/filtered": "  filtered:\n    identity: {roles: [Manager, org-acme]}",
		"test/lead":     "  lead:\n    identity: {roles: [Manager, org-acme]}",
	}},
	{"UGovManage", "gov-manager", []string{"Manager"}, map[string]string{"test/manager": "  manager:\n    identity: {roles: [Manager]}"}},
	{"UGovCycleA", "gov-cycle", []string{"CycleA"}, map[string]string{"test/cycle": "  cycle:\n    identity: {roles: [CycleA]}"}},
	{"UGovAdmin0", "gov-admin", []string{"Admin"}, map[string]string{"test/roles-admin": "    permission: admin\n    identity: {roles: [Admin]}"}},
	{"UGovOrgAcm", "gov-org-acme", []string{"org-acme"}, map[string]string{"test/no-product": "  no-product:\n    identity: {roles: [org-acme]}"}},
}

// actAsRoleUsers plants roleUsers and reloads both policies with their
// role-only profiles acting as them.
func (e *env) actAsRoleUsers(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	roleIDs := map[string]string{}
	for _, r := range e.all(t, parse.ClassRole) {
		roleIDs[r["name"].(string)] = r[parse.FieldObjectID].(string)
	}
	demoSrc, testSrc := string(policy.DemoSource()), testPolicy
	for _, u := range roleUsers {
		if err := e.st.Create(ctx, parse.ClassUser, []parse.Object{{parse.FieldObjectID: u.id, "username": u.name, "password": "pw-" + u.name}}); err != nil {
			t.Fatalf("plant user %s: %v", u.name, err)
		}
		for _, role := range u.roles {
			if roleIDs[role] == "" {
				t.Fatalf("no role %s", role)
			}
			if err := e.st.AddRelation(ctx, parse.ClassRole, "users", roleIDs[role], []string{u.id}); err != nil {
				t.Fatal(err)
			}
		}
		for prof, line := range u.profiles {
			src := &testSrc
			if strings.HasPrefix(prof, "demo/") {
				src = &demoSrc
			}
			repl := strings.Replace(line, "{roles: ["+strings.Join(u.roles, ", ")+"]}", "{user: "+u.id+"}", 1)
			if strings.Count(*src, line) != 1 || repl == line {
				t.Fatalf("profile %s: its identity line %q is not in the policy once", prof, line)
			}
			*src = strings.Replace(*src, line, repl, 1)
		}
	}
	var err error
	if e.demoPol, err = policy.Parse([]byte(demoSrc), policy.Options{Name: "demo.yaml"}); err != nil {
		t.Fatal(err)
	}
	if err := e.demoPol.Validate(ctx, e.st); err != nil {
		t.Fatal(err)
	}
	e.testPol = parsePolicy(t, e.st, testSrc)
}

func newEnv(t *testing.T, name string, st store.Store) *env {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	if _, err := demo.Generate(ctx, st, demo.Options{Rows: demoRows}); err != nil {
		t.Fatal(err)
	}
	e := &env{name: name, st: st, vars: map[string]string{}}
	e.plant(t)
	var err error
	if e.demoPol, err = policy.Demo(); err != nil {
		t.Fatal(err)
	}
	if err := e.demoPol.Validate(ctx, st); err != nil {
		t.Fatalf("demo policy: %v", err)
	}
	e.testPol = loadTestPolicy(t, st)
	t.Logf("%s: demo dataset (%d rows) and policies ready in %s", name, demoRows, time.Since(start).Round(time.Millisecond))
	return e
}

// set changes one object with the master key (no governance).
func (e *env) set(t *testing.T, class, id string, fields parse.Object) {
	t.Helper()
	if _, _, err := e.st.Update(context.Background(), store.Write{WriteACL: query.NoACLFilter, Class: class, ID: id}, fields); err != nil {
		t.Fatalf("plant %s#%s: %v", class, id, err)
	}
}

// plant writes the secret markers and the rows some cases need.
func (e *env) plant(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ptr := parse.Pointer
	e.set(t, "Ticket", ticketMasterOnly, parse.Object{"title": markMasterOnly})

	// Two Globex tickets whose ACL lets every Acme agent in: only the
	// tenant scope keeps them out.
	globexTickets := e.ids(t, "Ticket", func(r parse.Object) bool { return orgOf(r) == globex })
	e.vars["GLOBEX_TICKET"], e.vars["GLOBEX_OPEN_TICKET"] = globexTickets[0], globexTickets[1]
	e.set(t, "Ticket", globexTickets[0], parse.Object{"title": markGlobex, "status": "open", "ACL": map[string]any{"*": map[string]any{"read": true}}})
	e.set(t, "Ticket", globexTickets[1], parse.Object{"title": markGlobexOpen, "status": "open", "ACL": map[string]any{"*": map[string]any{"read": true, "write": true}}})
	e.vars["GLOBEX_PROJECT"] = e.ids(t, "Project", func(r parse.Object) bool { return orgOf(r) == globex })[0]
	e.vars["GLOBEX_CUSTOMER"] = e.ids(t, "Customer", func(r parse.Object) bool { return orgOf(r) == globex })[0]

	// The public-read ticket is closed (the support agent's filter hides
	// it); the org ticket is open, tagged and points to a customer.
	e.set(t, "Ticket", ticketPublicRead, parse.Object{"status": "closed"})
	customers := e.ids(t, "Customer", func(r parse.Object) bool {
		return orgOf(r) == acme && readable(r, "role:org-acme")
	})
	e.vars["ACME_CUSTOMER"] = customers[0]
	e.set(t, "Customer", customers[0], parse.Object{"email": markEmail})
	e.set(t, "Ticket", ticketOrg, parse.Object{"status": "open", "tags": []any{markTag}, "customer": ptr("Customer", customers[0])})
	e.set(t, "Project", projectWebsite, parse.Object{"budget": float64(987654321), "archived": false})

	// An archived Acme project every Acme member may read.
	archived := e.ids(t, "Project", func(r parse.Object) bool {
		return orgOf(r) == acme && r[parse.FieldObjectID] != projectWebsite && readable(r, "role:org-acme")
	})
	e.vars["ARCHIVED_PROJECT"] = archived[0]
	e.set(t, "Project", archived[0], parse.Object{"archived": true})

	// A public-read (not public-write) Acme comment.
	comments := e.ids(t, "Comment", func(r parse.Object) bool {
		acl, _ := r[parse.FieldACL].(map[string]any)
		star, _ := acl["*"].(map[string]any)
		return orgOf(r) == acme && star["read"] == true && star["write"] != true
	})
	e.vars["PUBLIC_COMMENT"] = comments[0]

	// The role cycle, and an Acme ticket only its roles may read.
	for name, id := range cycleRoles {
		if err := e.st.Create(ctx, parse.ClassRole, []parse.Object{{parse.FieldObjectID: id, "name": name, "ACL": map[string]any{"*": map[string]any{"read": true}}}}); err != nil {
			t.Fatal(err)
		}
	}
	for owner, child := range map[string]string{"CycleB": "CycleA", "CycleC": "CycleB", "CycleA": "CycleC"} {
		if err := e.st.AddRelation(ctx, parse.ClassRole, "roles", cycleRoles[owner], []string{cycleRoles[child]}); err != nil {
			t.Fatal(err)
		}
	}
	acmeTickets := e.ids(t, "Ticket", func(r parse.Object) bool { return orgOf(r) == acme })
	e.vars["CYCLE_TICKET"] = acmeTickets[len(acmeTickets)-1]
	e.set(t, "Ticket", e.vars["CYCLE_TICKET"], parse.Object{"ACL": map[string]any{"role:CycleC": map[string]any{"read": true}}})

	// An Acme ticket only role Admin may read (Admin inherits Manager and
	// org-acme, not the other way round).
	e.vars["ADMIN_ONLY_TICKET"] = acmeTickets[len(acmeTickets)-2]
	e.set(t, "Ticket", e.vars["ADMIN_ONLY_TICKET"], parse.Object{"ACL": map[string]any{"role:Admin": map[string]any{"read": true}}})

	// Two public Acme comments: one on a Globex ticket (a cross-tenant
	// pointer), one on the closed public-read ticket.
	e.vars["CROSS_COMMENT"], e.vars["CLOSED_COMMENT"] = "MCross0001", "MClosed001"
	public := map[string]any{"*": map[string]any{"read": true}}
	if err := e.st.Create(ctx, "Comment", []parse.Object{
		{parse.FieldObjectID: "MCross0001", "org": ptr("Organization", acme), "ticket": ptr("Ticket", globexTickets[0]), "body": "cross-tenant pointer", "likes": float64(0), "ACL": public},
		{parse.FieldObjectID: "MClosed001", "org": ptr("Organization", acme), "ticket": ptr("Ticket", ticketPublicRead), "body": "on a closed ticket", "likes": float64(0), "ACL": public},
	}); err != nil {
		t.Fatal(err)
	}

	// A class with an index on a protected field.
	vault := parse.NewSchema("Vault")
	vault.Fields["label"] = parse.Field{Type: parse.TypeString}
	vault.Fields["secretCode"] = parse.Field{Type: parse.TypeString}
	vault.CLP = parse.CLP{ProtectedFields: map[string][]string{"*": {"secretCode"}}}.Completed()
	vault.Indexes = map[string]map[string]int{"vault_label_1": {"label": 1}, "vault_code_1": {"secretCode": 1}}
	if err := e.st.CreateClass(ctx, vault); err != nil {
		t.Fatal(err)
	}

	// A class whose stored CLP names only get and create.
	partial := parse.NewSchema("Partial")
	partial.Fields["label"] = parse.Field{Type: parse.TypeString}
	partial.CLP = parse.CLP{Get: parse.PublicPerm(), Create: parse.PublicPerm()}
	if err := e.st.CreateClass(ctx, partial); err != nil {
		t.Fatal(err)
	}
	e.vars["PARTIAL"] = "PPartial01"
	if err := e.st.Create(ctx, "Partial", []parse.Object{{parse.FieldObjectID: "PPartial01", "label": "partial"}}); err != nil {
		t.Fatal(err)
	}

	// Sessions of the fixture user "member".
	far, past := map[string]any{"__type": "Date", "iso": "2999-01-01T00:00:00.000Z"}, map[string]any{"__type": "Date", "iso": "2001-01-01T00:00:00.000Z"}
	if err := e.st.Create(ctx, parse.ClassSession, []parse.Object{
		{"sessionToken": memberSession, "user": ptr(parse.ClassUser, demo.MemberUserID), "expiresAt": far},
		{"sessionToken": expiredSession, "user": ptr(parse.ClassUser, demo.MemberUserID), "expiresAt": past},
	}); err != nil {
		t.Fatal(err)
	}
}

// all returns every row of class, read with the master key.
func (e *env) all(t *testing.T, class string) []parse.Object {
	t.Helper()
	rows, err := e.st.Find(context.Background(), &query.Query{ReadACL: query.NoACLFilter, Class: class, Limit: -1, Order: []query.OrderKey{{Field: parse.FieldObjectID}}})
	if err != nil {
		t.Fatalf("read %s: %v", class, err)
	}
	return rows
}

// raw returns one row read with the master key (nil when missing).
func (e *env) raw(t *testing.T, class, id string) parse.Object {
	t.Helper()
	rows, err := e.st.Find(context.Background(), &query.Query{ReadACL: query.NoACLFilter, Class: class, Limit: 1,
		Where: query.Cmp{Path: query.Path{Field: parse.FieldObjectID, Type: parse.TypeString}, Op: query.OpEq, Value: id}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		return nil
	}
	return rows[0]
}

// ids returns the sorted ids of the rows of class that keep holds for.
func (e *env) ids(t *testing.T, class string, keep func(parse.Object) bool) []string {
	t.Helper()
	var out []string
	for _, r := range e.all(t, class) {
		if keep(r) {
			out = append(out, r[parse.FieldObjectID].(string))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatalf("the dataset has no %s row the test needs", class)
	}
	return out
}

// truth is the ground truth of what an agent should read: the rows of
// class in tenant (any tenant when "") whose ACL grants one of entries and
// that keep accepts, computed here in Go from the raw rows.
func (e *env) truth(t *testing.T, class, tenant string, entries []string, keep func(parse.Object) bool) []string {
	t.Helper()
	var out []string
	for _, r := range e.all(t, class) {
		if tenant != "" && orgOf(r) != tenant {
			continue
		}
		if !readable(r, entries...) || (keep != nil && !keep(r)) {
			continue
		}
		out = append(out, r[parse.FieldObjectID].(string))
	}
	sort.Strings(out)
	return out
}

// orgOf returns the organization id a row belongs to.
func orgOf(r parse.Object) string {
	if id, ok := r[parse.FieldObjectID].(string); ok && strings.HasPrefix(id, "O") && len(id) == 10 && r["slug"] != nil {
		return id // an Organization is its own tenant
	}
	if p, ok := r["org"].(map[string]any); ok {
		id, _ := p["objectId"].(string)
		return id
	}
	return ""
}

// readable applies a Parse ACL by hand: no ACL is public; otherwise one of
// the entries must have read access.
func readable(r parse.Object, entries ...string) bool { return aclGrants(r, "read", entries) }

func writable(r parse.Object, entries ...string) bool { return aclGrants(r, "write", entries) }

func aclGrants(r parse.Object, access string, entries []string) bool {
	acl, ok := r[parse.FieldACL].(map[string]any)
	if !ok {
		return r[parse.FieldACL] == nil
	}
	for _, e := range entries {
		if p, ok := acl[e].(map[string]any); ok && p[access] == true {
			return true
		}
	}
	return false
}

// The ACL entries each identity holds, written by hand from the demo's
// role graph (Admin inherits Manager; Manager inherits Support and Sales).
var (
	entriesAnalyst = []string{"*", "role:Manager", "role:org-acme", "role:Support", "role:Sales"}
	entriesSupport = []string{"*", demo.SupportUserID, "role:Support", "role:org-acme"}
	entriesMember  = []string{"*", demo.MemberUserID, "role:org-acme"}
	entriesNoRole  = []string{"*", demo.NoRoleUserID}
	entriesManager = []string{"*", "role:Manager", "role:Support", "role:Sales"}
	entriesCycle   = []string{"*", "role:CycleA", "role:CycleB", "role:CycleC"}
)

func fieldIs(field string, values ...any) func(parse.Object) bool {
	return func(r parse.Object) bool { return slices.Contains(values, r[field]) }
}

func not(f func(parse.Object) bool) func(parse.Object) bool {
	return func(r parse.Object) bool { return !f(r) }
}

// testPolicy is the policy of the cases the demo policy does not cover.
const testPolicy = `
settings:
  recursion_depth: 4
  # no default_agent: a request without a bearer token is refused

agents:
  root:
    permission: admin
    identity: master
    keys: [{key: test-root}]

  # The fixture user "member" (role org-acme only), write tier.
  member:
    permission: write
    identity: {user: member}
    tenant: OAAAAAAAAB
    keys: [{key: test-member}]

  # The fixture user "norole": public rows and its own only.
  norole:
    permission: write
    identity: {user: norole}
    tenant: OAAAAAAAAB

  manager:
    identity: {roles: [Manager]}
    tenant: OAAAAAAAAB

  cycle:
    identity: {roles: [CycleA]}
    tenant: OAAAAAAAAB

  # Admin tier without the master key.
  roles-admin:
    permission: admin
    identity: {roles: [Admin]}

  no-product:
    identity: {roles: [org-acme]}
    tenant: OAAAAAAAAB
    classes: {except: [Product]}

  filtered:
    identity: {roles: [Manager, org-acme]}
    tenant: OAAAAAAAAB
    filters:
      ":default": {status: {$in: [open, active, paid]}}
      Comment: {likes: {$gte: 1}}

  lead:
    identity: {roles: [Manager, org-acme]}
    tenant: OAAAAAAAAB
    tools: {except: [export_data]}
    classes: [Ticket, Comment, Project, Organization]

  # Asks for export_data and Customer, which its parent does not have.
  triage:
    parent: lead
    tools: [query_class, count_objects, get_object, export_data]
    classes: [Ticket, Customer]
    filters:
      Ticket: {priority: {$lte: 2}}

  member-lead:
    identity: {user: member}
    tenant: OAAAAAAAAB

  # A role its parent user does not hold: refused when the agent is built.
  usurper:
    parent: member-lead
    identity: {roles: [Admin]}

  portal:
    identity: session
    tenant: OAAAAAAAAB
    keys: [{key: test-portal}]

classes:
  Organization:
    tenant: {field: objectId}
  Project:
    tenant: {field: org}
    # every field: budget stays protected by the class-level permissions
    agent_fields: [org, name, key, description, status, owner, members, budget, archived, startDate, dueDate, tags, logo, color]
    join_fields: [name, key, status]
    canonical_filter: {archived: {$ne: true}}
  Ticket:
    tenant: {field: org}
    agent_fields: [org, project, key, number, title, description, status, priority, type, reporter, assignee, customer, dueDate, resolvedAt]
  Comment:
    tenant: {field: org}
  Product:
    tenant: {field: org}
  Vault:
    # both name a protected field
    canonical_filter: {secretCode: {$ne: none}}
    large_fields: [secretCode]
  Customer:
    hidden: except_master
  Order:
    hidden: always
`

func knownTools() []string {
	var out []string
	for _, t := range tools.NewRegistry().List() {
		out = append(out, t.Name)
	}
	return out
}

func loadTestPolicy(t *testing.T, st store.Store) *policy.Policy {
	t.Helper()
	return parsePolicy(t, st, testPolicy)
}

func parsePolicy(t *testing.T, st store.Store, src string) *policy.Policy {
	t.Helper()
	pol, err := policy.Parse([]byte(src), policy.Options{Name: "test.yaml", KnownTools: knownTools()})
	if err != nil {
		t.Fatalf("test policy: %v", err)
	}
	if err := pol.Validate(context.Background(), st); err != nil {
		t.Fatalf("test policy: %v", err)
	}
	return pol
}

// policyOf returns the named policy of e ("demo" or "test").
func (e *env) policyOf(name string) *policy.Policy {
	if name == "demo" {
		return e.demoPol
	}
	return e.testPol
}

// header builds request headers from name/value pairs.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func keysOf(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
