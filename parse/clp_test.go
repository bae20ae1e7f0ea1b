package parse

import (
	"encoding/json"
	"slices"
	"testing"
)

// The answers in these tables are Parse Server 9's, from its
// SchemaController.validatePermission (refused or not) and
// DatabaseController.addPointerPermissions / addProtectedFields (which rows
// and fields remain), for the same stored CLP and caller.

var (
	anon   = Principal{Entries: []string{PublicKey}}
	alice  = Principal{UserID: "alice", Entries: []string{PublicKey, "alice", "role:Staff"}}
	bob    = Principal{UserID: "bob", Entries: []string{PublicKey, "bob"}}
	role   = Principal{Entries: []string{PublicKey, "role:Staff"}} // a role identity, no user
	master = Principal{Master: true}
)

func clpOf(t *testing.T, js string) CLP {
	t.Helper()
	if js == "" {
		return CLP{}
	}
	var c CLP
	if err := json.Unmarshal([]byte(js), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCLPDecide(t *testing.T) {
	cases := []struct {
		name string
		clp  string
		op   Op
		who  Principal
		want Decision
	}{
		{"no CLP stored: public", "", OpFind, anon, Decision{Allowed: true}},
		{"no CLP stored: public create", "", OpCreate, anon, Decision{Allowed: true}},
		{"master passes a master-only op", `{"find":{}}`, OpFind, master, Decision{Allowed: true}},
		// Parse Server's adapters fill an operation a stored CLP leaves
		// out with {}: master key only (issue 14: {get, create} refuses find).
		{"left out of a stored CLP: refused to anonymous", `{"get":{"*":true},"create":{"*":true}}`, OpFind, anon, Decision{}},
		{"left out of a stored CLP: refused to a user", `{"get":{"*":true},"create":{"*":true}}`, OpCount, alice, Decision{}},
		{"named op of the same CLP passes", `{"get":{"*":true},"create":{"*":true}}`, OpGet, anon, Decision{Allowed: true}},
		{"only protectedFields stored: ops are master-only", `{"protectedFields":{"*":["x"]}}`, OpFind, alice, Decision{}},
		{"empty op: master only", `{"find":{}}`, OpFind, alice, Decision{}},
		{"public entry", `{"find":{"*":true}}`, OpFind, anon, Decision{Allowed: true}},
		{"user entry", `{"find":{"bob":true}}`, OpFind, bob, Decision{Allowed: true}},
		{"user entry, other user", `{"find":{"bob":true}}`, OpFind, alice, Decision{}},
		{"role entry", `{"find":{"role:Staff":true}}`, OpFind, alice, Decision{Allowed: true}},
		{"role entry, role identity", `{"find":{"role:Staff":true}}`, OpFind, role, Decision{Allowed: true}},
		{"false entry grants nothing", `{"find":{"*":false}}`, OpFind, anon, Decision{}},
		{"requiresAuthentication: anonymous refused", `{"find":{"requiresAuthentication":true}}`, OpFind, anon, Decision{}},
		{"requiresAuthentication: user passes", `{"find":{"requiresAuthentication":true}}`, OpFind, bob, Decision{Allowed: true}},
		{"requiresAuthentication: create", `{"create":{"requiresAuthentication":true}}`, OpCreate, bob, Decision{Allowed: true}},
		{"requiresAuthentication: a role identity is no user", `{"find":{"requiresAuthentication":true}}`, OpFind, role, Decision{}},
		{"pointerFields: rows of the user", `{"find":{"pointerFields":["owner"]}}`, OpFind, alice, Decision{Allowed: true, UserFields: []string{"owner"}, User: "alice"}},
		{"pointerFields: anonymous gets no rows", `{"find":{"pointerFields":["owner"]}}`, OpFind, anon, Decision{Allowed: true, NoRows: true}},
		{"pointerFields: role identity gets no rows", `{"update":{"pointerFields":["owner"]}}`, OpUpdate, role, Decision{Allowed: true, NoRows: true}},
		{"pointerFields never admit a create", `{"create":{"pointerFields":["owner"]}}`, OpCreate, alice, Decision{}},
		{"readUserFields restrict find", `{"find":{},"readUserFields":["owner"]}`, OpFind, bob, Decision{Allowed: true, UserFields: []string{"owner"}, User: "bob"}},
		{"readUserFields restrict get", `{"get":{},"readUserFields":["owner","editors"]}`, OpGet, bob, Decision{Allowed: true, UserFields: []string{"owner", "editors"}, User: "bob"}},
		{"readUserFields do not admit update", `{"update":{},"readUserFields":["owner"]}`, OpUpdate, bob, Decision{}},
		{"writeUserFields restrict delete", `{"delete":{},"writeUserFields":["owner"]}`, OpDelete, bob, Decision{Allowed: true, UserFields: []string{"owner"}, User: "bob"}},
		{"writeUserFields never admit create", `{"create":{},"writeUserFields":["owner"]}`, OpCreate, bob, Decision{}},
		{"pointerFields and user fields merge", `{"update":{"pointerFields":["owner"]},"writeUserFields":["owner","editor"]}`, OpUpdate, bob, Decision{Allowed: true, UserFields: []string{"owner", "editor"}, User: "bob"}},
		{"requiresAuthentication keeps pointerFields", `{"find":{"requiresAuthentication":true,"pointerFields":["owner"]}}`, OpFind, bob, Decision{Allowed: true, UserFields: []string{"owner"}, User: "bob"}},
		{"an entry the caller holds lifts pointerFields", `{"find":{"role:Staff":true,"pointerFields":["owner"]}}`, OpFind, alice, Decision{Allowed: true}},
		{"addField by pointerFields refused", `{"addField":{"pointerFields":["owner"]}}`, OpAddField, alice, Decision{}},
		{"no operation: refused even with no CLP", "", Op("erase"), alice, Decision{}},
		{"no operation: master passes", "", Op("erase"), master, Decision{Allowed: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := clpOf(t, c.clp).Decide(c.op, c.who)
			if got.Allowed != c.want.Allowed || got.NoRows != c.want.NoRows || got.User != c.want.User || !slices.Equal(got.UserFields, c.want.UserFields) {
				t.Fatalf("Decide(%s) = %+v, want %+v", c.op, got, c.want)
			}
		})
	}
}

func TestProtectedFor(t *testing.T) {
	pf := `{"find":{"*":true},"protectedFields":{"*":["email","phone","ssn"],"role:Staff":["ssn","phone"],"bob":["ssn"],"authenticated":["phone","ssn","email"]}}`
	cases := []struct {
		name  string
		class string
		clp   string
		who   Principal
		want  []string
	}{
		{"no protectedFields", "Thing", `{"find":{"*":true}}`, alice, nil},
		{"anonymous: the * list", "Thing", pf, anon, []string{"email", "phone", "ssn"}},
		// alice holds *, authenticated and role:Staff: their intersection.
		{"roles intersect", "Thing", pf, alice, []string{"phone", "ssn"}},
		// bob holds *, authenticated and its id.
		{"user id intersects", "Thing", pf, bob, []string{"ssn"}},
		// a role identity holds its roles, and is no signed-in user.
		{"role identity: its roles, not authenticated", "Thing", pf, role, []string{"phone", "ssn"}},
		{"master sees all", "Thing", pf, master, nil},
		{"an empty list for an entry held lifts all", "Thing", `{"protectedFields":{"*":["a"],"role:Staff":[]}}`, alice, nil},
		{"userField entries are not used", "Thing", `{"protectedFields":{"*":["a"],"userField:owner":[]}}`, alice, []string{"a"}},
		// Parse Server's default protectedFields option hides a user's
		// email from everyone else, whatever the stored CLP says.
		{"_User email hidden by default", ClassUser, "", bob, []string{"email"}},
		{"_User stored list merged with the default", ClassUser, `{"protectedFields":{"*":["phone"]}}`, anon, []string{"phone", "email"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sch := NewSchema(c.class)
			sch.CLP = clpOf(t, c.clp)
			got := ProtectedFor(sch, c.who)
			slices.Sort(got)
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("ProtectedFor = %v, want %v", got, want)
			}
		})
	}
}

func TestOwnerExempt(t *testing.T) {
	if !OwnerExempt(ClassUser, "bob", bob) || OwnerExempt(ClassUser, "alice", bob) || OwnerExempt("Thing", "bob", bob) || OwnerExempt(ClassUser, "", anon) {
		t.Fatal("the owner exemption is for a user's own _User row only")
	}
}

func TestIsInternalField(t *testing.T) {
	for _, f := range []string{"authData", "sessionToken", "password", "_hashed_password", "_auth_data_github", "_rperm", "_failed_login_count"} {
		if !IsInternalField(f) {
			t.Errorf("%s must be internal", f)
		}
	}
	for _, f := range []string{"email", "username", "name", "auth"} {
		if IsInternalField(f) {
			t.Errorf("%s is not internal", f)
		}
	}
}

// A stored CLP round-trips through _SCHEMA with its left-out operations
// still left out (and so still master-key only).
func TestStoredCLPKeepsLeftOutOps(t *testing.T) {
	sch := NewSchema("Thing")
	sch.CLP = clpOf(t, `{"get":{"*":true},"create":{"*":true}}`)
	raw, err := MarshalStoredSchema(sch)
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalStoredSchema("Thing", raw)
	if err != nil {
		t.Fatal(err)
	}
	if back.CLP.Decide(OpFind, anon).Allowed || !back.CLP.Decide(OpGet, anon).Allowed {
		t.Fatalf("round-tripped CLP decides find/get wrongly: %+v", back.CLP)
	}
}

func TestCLPFilled(t *testing.T) {
	if c := (CLP{}).Filled(); !c.IsZero() {
		t.Fatalf("an empty CLP must stay empty (public): %+v", c)
	}
	c := clpOf(t, `{"get":{"*":true}}`).Filled()
	b, _ := json.Marshal(c)
	if string(b) != `{"get":{"*":true},"find":{},"count":{},"create":{},"update":{},"delete":{},"addField":{}}` {
		t.Fatalf("filled: %s", b)
	}
	for _, op := range []Op{OpGet, OpFind, OpCount, OpCreate} {
		if c.Decide(op, anon).Allowed != clpOf(t, `{"get":{"*":true}}`).Decide(op, anon).Allowed {
			t.Fatalf("Filled changed the decision for %s", op)
		}
	}
}
