package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

const testRows = 2000

// generate writes a dataset into a new SQLite store in a temporary
// directory.
func generate(t *testing.T, rows int, seed int64) (store.Store, Stats) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "demo.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	stats, err := Generate(ctx, st, Options{Rows: rows, Seed: seed})
	if err != nil {
		t.Fatalf("Generate(rows=%d, seed=%d): %v", rows, seed, err)
	}
	return st, stats
}

func findAll(t *testing.T, st store.Store, class string) []parse.Object {
	t.Helper()
	objs, err := st.Find(context.Background(), &query.Query{ReadACL: query.NoACLFilter, Class: class, Limit: -1})
	if err != nil {
		t.Fatalf("find %s: %v", class, err)
	}
	return objs
}

func related(t *testing.T, st store.Store, class, field, owner string) []string {
	t.Helper()
	ids, err := st.RelatedIDs(context.Background(), class, field, owner)
	if err != nil {
		t.Fatalf("related %s.%s of %s: %v", class, field, owner, err)
	}
	return ids
}

// relations lists, per Relation field of the generated classes, every
// owning object's related ids.
func relations(t *testing.T, st store.Store) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, c := range []struct{ class, field string }{
		{ClassProject, "members"}, {parse.ClassRole, "users"}, {parse.ClassRole, "roles"},
	} {
		for _, o := range findAll(t, st, c.class) {
			oid := o["objectId"].(string)
			out[c.class+"."+c.field+"."+oid] = related(t, st, c.class, c.field, oid)
		}
	}
	return out
}

func TestDeterministic(t *testing.T) {
	a, sa := generate(t, testRows, 7)
	b, sb := generate(t, testRows, 7)
	if diff := cmp.Diff(sa, sb); diff != "" {
		t.Fatalf("stats differ (-first +second):\n%s", diff)
	}
	for _, class := range Classes() {
		oa, ob := findAll(t, a, class), findAll(t, b, class)
		if len(oa) == 0 {
			t.Fatalf("%s is empty", class)
		}
		if diff := cmp.Diff(oa, ob); diff != "" {
			t.Errorf("%s differs between two runs with the same seed (-first +second):\n%s", class, diff)
		}
	}
	if diff := cmp.Diff(relations(t, a), relations(t, b)); diff != "" {
		t.Errorf("relations differ (-first +second):\n%s", diff)
	}
	ctx := context.Background()
	scha, err := a.Schemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	schb, err := b.Schemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(scha, schb); diff != "" {
		t.Errorf("schemas differ:\n%s", diff)
	}
}

func TestSeedChangesData(t *testing.T) {
	a, _ := generate(t, testRows, 1)
	b, _ := generate(t, testRows, 2)
	for _, class := range []string{ClassTicket, ClassOrder, parse.ClassUser} {
		if cmp.Equal(findAll(t, a, class), findAll(t, b, class)) {
			t.Errorf("%s is identical for seeds 1 and 2", class)
		}
	}
	// The fixtures do not depend on the seed.
	for _, st := range []store.Store{a, b} {
		checkFixtures(t, st)
	}
}

func TestDefaultSeed(t *testing.T) {
	a, _ := generate(t, 300, 0)
	b, _ := generate(t, 300, 1)
	if diff := cmp.Diff(findAll(t, a, ClassTicket), findAll(t, b, ClassTicket)); diff != "" {
		t.Errorf("seed 0 should mean seed 1:\n%s", diff)
	}
}

func TestRowCount(t *testing.T) {
	ctx := context.Background()
	for _, rows := range []int{1000, 3000} {
		t.Run(fmt.Sprint(rows), func(t *testing.T) {
			st, stats := generate(t, rows, 3)
			within(t, rows, stats.Objects)
			total := 0
			for _, class := range Classes() {
				n, err := st.Count(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: class})
				if err != nil {
					t.Fatal(err)
				}
				if int(n) != stats.PerClass[class] {
					t.Errorf("%s: store has %d objects, stats say %d", class, n, stats.PerClass[class])
				}
				total += int(n)
			}
			if total != stats.Objects {
				t.Errorf("store holds %d objects, stats say %d", total, stats.Objects)
			}
		})
	}
	// Larger sizes: the plan alone (writing them is the benchmark's job).
	for _, rows := range []int{0, 250, 10000, 123457, 1000000, 5000000} {
		p := makePlan(rows, rand1())
		if rows > 0 {
			within(t, rows, p.total)
		}
		for k := range numKinds {
			if p.count[k] <= 0 {
				t.Errorf("rows=%d: no %s", rows, kindClass[k])
			}
		}
	}
}

func within(t *testing.T, want, got int) {
	t.Helper()
	if d := float64(got-want) / float64(want); d > 0.05 || d < -0.05 {
		t.Errorf("rows=%d: generated %d objects (%+.1f%%)", want, got, 100*d)
	}
}

func rand1() *rand.Rand { return (&gen{seed: 1}).rng(-1) }

func TestProgressAndStats(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "demo.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var calls, last, lastTotal int
	stats, err := Generate(ctx, st, Options{Rows: 5000, Progress: func(done, total int) {
		if done < last {
			t.Errorf("progress went back from %d to %d", last, done)
		}
		calls++
		last, lastTotal = done, total
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 3 || last != stats.Objects || lastTotal != stats.Objects {
		t.Errorf("progress: %d calls, last %d/%d, stats %d", calls, last, lastTotal, stats.Objects)
	}
	sum := 0
	for _, n := range stats.PerClass {
		sum += n
	}
	if sum != stats.Objects || len(stats.PerClass) != len(Classes()) {
		t.Errorf("stats %+v", stats)
	}
	// A second run into the same store is refused before writing anything.
	if _, err := Generate(ctx, st, Options{Rows: 100}); !errors.Is(err, store.ErrClassExists) {
		t.Errorf("second Generate: %v", err)
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "demo.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = Generate(ctx, st, Options{Rows: 20000, Progress: func(done, total int) {
		if done > 0 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Generate after cancel: %v", err)
	}
}

// shared is one 2000-row dataset for the read-only tests.
func shared(t *testing.T) store.Store {
	t.Helper()
	st, _ := generate(t, testRows, 1)
	return st
}

func TestDataset(t *testing.T) {
	st := shared(t)
	ctx := context.Background()
	all := map[string][]parse.Object{}
	byID := map[string]map[string]parse.Object{}
	for _, class := range Classes() {
		objs := findAll(t, st, class)
		if len(objs) == 0 {
			t.Errorf("%s is empty", class)
		}
		all[class] = objs
		byID[class] = map[string]parse.Object{}
		for _, o := range objs {
			byID[class][o["objectId"].(string)] = o
		}
	}
	schemas := map[string]parse.Schema{}
	for _, class := range Classes() {
		sch, err := st.Schema(ctx, class)
		if err != nil {
			t.Fatalf("class %s: %v", class, err)
		}
		schemas[class] = sch
	}

	t.Run("classes", func(t *testing.T) {
		got, err := st.Schemas(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range got {
			names = append(names, s.ClassName)
		}
		for _, c := range Classes() {
			if !slices.Contains(names, c) {
				t.Errorf("class %s missing from %v", c, names)
			}
		}
		if parse.IsSystemClass(Classes()[0]) {
			t.Errorf("Classes()[0] = %s: must be a user class (callers detect the demo by it)", Classes()[0])
		}
		user := 0
		for _, c := range Classes() {
			if !parse.IsSystemClass(c) {
				user++
			}
		}
		if user < 6 {
			t.Errorf("only %d user classes", user)
		}
	})

	t.Run("every field is used", func(t *testing.T) {
		for class, sch := range schemas {
			for name, f := range sch.Fields {
				if f.Type == parse.TypeRelation || name == parse.FieldACL || name == "authData" && len(all[class]) < 50 {
					continue
				}
				found := false
				for _, o := range all[class] {
					if _, ok := o[name]; ok {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("%s.%s (%s) is never set", class, name, f.Type)
				}
			}
		}
		types := map[parse.FieldType]bool{}
		for _, sch := range schemas {
			for _, f := range sch.Fields {
				types[f.Type] = true
			}
		}
		for _, ty := range []parse.FieldType{parse.TypeString, parse.TypeNumber, parse.TypeBoolean, parse.TypeDate,
			parse.TypeObject, parse.TypeArray, parse.TypePointer, parse.TypeRelation, parse.TypeFile, parse.TypeGeoPoint} {
			if !types[ty] {
				t.Errorf("no field of type %s", ty)
			}
		}
	})

	t.Run("dates", func(t *testing.T) {
		var first, last time.Time
		for class, objs := range all {
			for _, o := range objs {
				c, err1 := parse.ParseDate(o["createdAt"].(string))
				u, err2 := parse.ParseDate(o["updatedAt"].(string))
				if err1 != nil || err2 != nil {
					t.Fatalf("%s %v: bad dates", class, o["objectId"])
				}
				if c.Before(Start) || u.After(End) || u.Before(c) {
					t.Errorf("%s %v: createdAt %v updatedAt %v outside [%v, %v] or out of order", class, o["objectId"], c, u, Start, End)
				}
				if first.IsZero() || c.Before(first) {
					first = c
				}
				if u.After(last) {
					last = u
				}
			}
		}
		if last.Sub(first) < 365*24*time.Hour {
			t.Errorf("dates span only %v..%v", first, last)
		}
	})

	t.Run("acl kinds", func(t *testing.T) {
		for _, class := range []string{ClassTicket, ClassComment, ClassProject, ClassCustomer, ClassOrder, ClassProduct, parse.ClassUser, ClassOrganization} {
			kinds := map[string]int{}
			for _, o := range all[class] {
				kinds[aclKindOf(o)]++
			}
			t.Logf("%s ACLs: %v", class, kinds)
			if class == ClassTicket {
				for _, k := range []string{"none", "public", "user", "role", "master"} {
					if kinds[k] == 0 {
						t.Errorf("no %s ticket ACL: %v", k, kinds)
					}
				}
			}
		}
		total := map[string]int{}
		for _, objs := range all {
			for _, o := range objs {
				total[aclKindOf(o)]++
			}
		}
		for _, k := range []string{"none", "public", "user", "role", "master"} {
			if total[k] < 10 {
				t.Errorf("only %d rows with a %s ACL", total[k], k)
			}
		}
	})

	t.Run("pointers", func(t *testing.T) {
		for class, sch := range schemas {
			for name, f := range sch.Fields {
				if f.Type != parse.TypePointer {
					continue
				}
				n := 0
				for _, o := range all[class] {
					v, ok := o[name]
					if !ok {
						continue
					}
					tc, tid, ok := parse.PointerID(v)
					if !ok || tc != f.TargetClass {
						t.Fatalf("%s.%s = %v", class, name, v)
					}
					if _, ok := byID[tc][tid]; !ok {
						t.Errorf("%s %v: %s points to missing %s %s", class, o["objectId"], name, tc, tid)
					}
					n++
				}
				if n == 0 {
					t.Errorf("%s.%s is never set", class, name)
				}
			}
		}
		// Pointers inside the Order.items array.
		for _, o := range all[ClassOrder] {
			for _, it := range o["items"].([]any) {
				_, pid, ok := parse.PointerID(it.(map[string]any)["product"])
				if !ok || byID[ClassProduct][pid] == nil {
					t.Fatalf("order %v: item %v", o["objectId"], it)
				}
			}
		}
	})

	t.Run("tenancy", func(t *testing.T) {
		orgOf := func(class, oid string) string {
			_, org, _ := parse.PointerID(byID[class][oid]["org"])
			return org
		}
		check := func(class, field, target string) {
			for _, o := range all[class] {
				_, tid, ok := parse.PointerID(o[field])
				if !ok {
					continue
				}
				_, org, _ := parse.PointerID(o["org"])
				if got := orgOf(target, tid); got != org {
					t.Errorf("%s %v (org %s): %s is in org %s", class, o["objectId"], org, field, got)
				}
			}
		}
		check(ClassTicket, "project", ClassProject)
		check(ClassTicket, "customer", ClassCustomer)
		check(ClassComment, "ticket", ClassTicket)
		check(ClassOrder, "customer", ClassCustomer)
		for class, sch := range schemas {
			if f, ok := sch.Fields["org"]; ok && f.TargetClass == ClassOrganization {
				for _, o := range all[class] {
					if _, ok := o["org"]; !ok {
						t.Fatalf("%s %v has no org", class, o["objectId"])
					}
				}
			} else if class != ClassOrganization && !parse.IsSystemClass(class) {
				t.Errorf("%s has no org field", class)
			}
		}
		// Comments come after their ticket.
		for _, c := range all[ClassComment] {
			_, tid, _ := parse.PointerID(c["ticket"])
			if c["createdAt"].(string) < byID[ClassTicket][tid]["createdAt"].(string) {
				t.Errorf("comment %v predates ticket %s", c["objectId"], tid)
			}
		}
	})

	t.Run("relations", func(t *testing.T) {
		for _, p := range all[ClassProject] {
			members := related(t, st, ClassProject, "members", p["objectId"].(string))
			if len(members) == 0 {
				t.Fatalf("project %v has no members", p["objectId"])
			}
			for _, m := range members {
				if byID[parse.ClassUser][m] == nil {
					t.Errorf("project %v: member %s does not exist", p["objectId"], m)
				}
			}
		}
		for _, r := range all[parse.ClassRole] {
			rid := r["objectId"].(string)
			users := related(t, st, parse.ClassRole, "users", rid)
			if len(users) == 0 {
				t.Errorf("role %v has no users", r["name"])
			}
			for _, u := range users {
				if byID[parse.ClassUser][u] == nil {
					t.Errorf("role %v: user %s does not exist", r["name"], u)
				}
			}
			for _, c := range related(t, st, parse.ClassRole, "roles", rid) {
				if byID[parse.ClassRole][c] == nil {
					t.Errorf("role %v: child role %s does not exist", r["name"], c)
				}
			}
		}
	})

	t.Run("clp", func(t *testing.T) {
		order := schemas[ClassOrder].CLP
		anon := parse.Principal{Entries: []string{parse.PublicKey}}
		member := parse.Principal{UserID: MemberUserID, Entries: []string{parse.PublicKey, MemberUserID, parse.RoleEntry(RoleAcme)}}
		admin := parse.Principal{UserID: AdminUserID, Entries: []string{parse.PublicKey, AdminUserID, parse.RoleEntry(RoleAdmin)}}
		allows := func(c parse.CLP, op parse.Op, p parse.Principal) bool { return c.Decide(op, p).Allowed }
		if allows(order, parse.OpFind, anon) || allows(order, parse.OpFind, member) || !allows(order, parse.OpFind, admin) {
			t.Errorf("Order find CLP: %+v", order.Find)
		}
		cust := schemas[ClassCustomer].CLP
		if allows(cust, parse.OpFind, anon) || !allows(cust, parse.OpFind, member) {
			t.Errorf("Customer find CLP: %+v", cust.Find)
		}
		if !slices.Contains(cust.ProtectedFields[parse.PublicKey], "email") || !slices.Contains(cust.ProtectedFields[parse.PublicKey], "phone") {
			t.Errorf("Customer protectedFields: %v", cust.ProtectedFields)
		}
		// Every demo CLP states every operation: one left out would be
		// master-key only.
		for class, sch := range schemas {
			for _, op := range []parse.Op{parse.OpGet, parse.OpFind, parse.OpCount, parse.OpCreate, parse.OpUpdate, parse.OpDelete, parse.OpAddField} {
				if sch.CLP.Perm(op) == nil && !parse.IsSystemClass(class) {
					t.Errorf("%s CLP leaves %s out", class, op)
				}
			}
		}
	})

	t.Run("visibility", func(t *testing.T) {
		count := func(class string, entries ...string) int64 {
			q := &query.Query{Class: class, ReadACL: query.ACLEntries(entries...)}
			if entries == nil {
				q.ReadACL = query.NoACLFilter
			}
			n, err := st.Count(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		all := count(ClassTicket)
		member := count(ClassTicket, parse.PublicKey, MemberUserID, parse.RoleEntry(RoleAcme))
		noRole := count(ClassTicket, parse.PublicKey, NoRoleUserID)
		admin := count(ClassTicket, parse.PublicKey, AdminUserID, parse.RoleEntry(RoleAdmin), parse.RoleEntry(RoleAcme))
		t.Logf("tickets: all %d, admin %d, member %d, norole %d", all, admin, member, noRole)
		if !(0 < noRole && noRole < member && member < admin && admin < all) {
			t.Errorf("tickets: all %d, admin %d, member %d, norole %d", all, admin, member, noRole)
		}
	})
}

// aclKindOf classifies an object's ACL.
func aclKindOf(o parse.Object) string {
	a, ok := o["ACL"].(map[string]any)
	switch {
	case !ok:
		return "none"
	case len(a) == 0:
		return "master"
	case a[parse.PublicKey] != nil:
		return "public"
	}
	for k := range a {
		if !parse.IsRoleEntry(k) {
			return "user"
		}
	}
	return "role"
}

func TestFixtures(t *testing.T) {
	checkFixtures(t, shared(t))
}

func checkFixtures(t *testing.T, st store.Store) {
	t.Helper()
	for _, c := range []struct {
		got  string
		k, i int
	}{
		{OrgAcmeID, kOrg, 0}, {OrgGlobexID, kOrg, 1}, {OrgInitechID, kOrg, 2},
		{AdminUserID, kUser, 0}, {MemberUserID, kUser, 1}, {SupportUserID, kUser, 2}, {NoRoleUserID, kUser, 3}, {GlobexUserID, kUser, 4},
		{RoleAdminID, kRole, 0}, {RoleManagerID, kRole, 1}, {RoleSupportID, kRole, 2}, {RoleSalesID, kRole, 3},
		{RoleAcmeID, kRole, 4}, {RoleGlobexID, kRole, 5}, {RoleInitechID, kRole, 6},
		{ProjectWebsiteID, kProject, 0},
		{TicketNoACLID, kTicket, 0}, {TicketPublicReadID, kTicket, 1}, {TicketOrgID, kTicket, 2},
		{TicketMemberID, kTicket, 3}, {TicketSupportID, kTicket, 4}, {TicketMasterOnlyID, kTicket, 5},
	} {
		if want := id(c.k, c.i); c.got != want {
			t.Errorf("fixture id %s, generated %s", c.got, want)
		}
	}
	get := func(class, oid string) parse.Object {
		objs, err := st.Find(context.Background(), &query.Query{ReadACL: query.NoACLFilter, Class: class, Limit: 1,
			Where: query.Cmp{Path: query.Path{Field: "objectId", Type: parse.TypeString}, Op: query.OpEq, Value: oid}})
		if err != nil || len(objs) != 1 {
			t.Fatalf("%s %s: %v %v", class, oid, objs, err)
		}
		return objs[0]
	}
	for oid, name := range map[string]string{OrgAcmeID: OrgAcmeName, OrgGlobexID: OrgGlobexName, OrgInitechID: OrgInitechName} {
		if got := get(ClassOrganization, oid)["name"]; got != name {
			t.Errorf("org %s is %v, want %s", oid, got, name)
		}
	}
	for oid, name := range map[string]string{AdminUserID: AdminUsername, MemberUserID: MemberUsername, SupportUserID: SupportUsername,
		NoRoleUserID: NoRoleUsername, GlobexUserID: GlobexUsername} {
		if got := get(parse.ClassUser, oid)["username"]; got != name {
			t.Errorf("user %s is %v, want %s", oid, got, name)
		}
	}
	roleUsers := map[string][]string{}
	for oid, name := range map[string]string{RoleAdminID: RoleAdmin, RoleManagerID: RoleManager, RoleSupportID: RoleSupport,
		RoleSalesID: RoleSales, RoleAcmeID: RoleAcme, RoleGlobexID: RoleGlobex, RoleInitechID: RoleInitech} {
		if got := get(parse.ClassRole, oid)["name"]; got != name {
			t.Errorf("role %s is %v, want %s", oid, got, name)
		}
		roleUsers[name] = related(t, st, parse.ClassRole, "users", oid)
	}
	inRole := func(user, role string) bool { return slices.Contains(roleUsers[role], user) }
	if !inRole(AdminUserID, RoleAdmin) || !inRole(AdminUserID, RoleAcme) || !inRole(MemberUserID, RoleAcme) ||
		inRole(MemberUserID, RoleAdmin) || inRole(MemberUserID, RoleSupport) || !inRole(SupportUserID, RoleSupport) ||
		!inRole(GlobexUserID, RoleGlobex) || inRole(GlobexUserID, RoleAcme) {
		t.Errorf("fixture role membership: %v", roleUsers)
	}
	for role := range roleUsers {
		if inRole(NoRoleUserID, role) {
			t.Errorf("%s is in role %s", NoRoleUsername, role)
		}
	}
	if got := related(t, st, parse.ClassRole, "roles", RoleManagerID); !slices.Equal(got, []string{RoleAdminID}) {
		t.Errorf("Manager.roles = %v", got)
	}
	if got := related(t, st, parse.ClassRole, "roles", RoleAcmeID); !slices.Equal(got, []string{RoleAdminID}) {
		t.Errorf("org-acme.roles = %v", got)
	}
	p := get(ClassProject, ProjectWebsiteID)
	if _, org, _ := parse.PointerID(p["org"]); p["name"] != ProjectWebsiteName || p["key"] != "WEB" || org != OrgAcmeID {
		t.Errorf("fixture project: %v", p)
	}
	members := related(t, st, ClassProject, "members", ProjectWebsiteID)
	if want := []string{AdminUserID, MemberUserID, SupportUserID}; !slices.Equal(members, want) {
		t.Errorf("fixture project members %v, want %v", members, want)
	}
	if _, owner, _ := parse.PointerID(get(ClassOrganization, OrgAcmeID)["owner"]); owner != AdminUserID {
		t.Errorf("Acme owner %s", owner)
	}
	rwp := map[string]any{"read": true, "write": true}
	r := map[string]any{"read": true}
	acme, admin := parse.RoleEntry(RoleAcme), parse.RoleEntry(RoleAdmin)
	for oid, want := range map[string]any{
		TicketNoACLID:      nil,
		TicketPublicReadID: map[string]any{"*": r, acme: rwp, admin: rwp},
		TicketOrgID:        map[string]any{acme: rwp, admin: rwp},
		TicketMemberID:     map[string]any{MemberUserID: rwp, AdminUserID: rwp},
		TicketSupportID:    map[string]any{parse.RoleEntry(RoleSupport): rwp, admin: rwp},
		TicketMasterOnlyID: map[string]any{},
	} {
		tk := get(ClassTicket, oid)
		if diff := cmp.Diff(want, tk["ACL"]); diff != "" {
			t.Errorf("ticket %s ACL (-want +got):\n%s", oid, diff)
		}
		if _, proj, _ := parse.PointerID(tk["project"]); proj != ProjectWebsiteID {
			t.Errorf("ticket %s project %s", oid, proj)
		}
	}
	tk := get(ClassTicket, TicketMemberID)
	_, rep, _ := parse.PointerID(tk["reporter"])
	_, asg, _ := parse.PointerID(tk["assignee"])
	if rep != MemberUserID || asg != AdminUserID {
		t.Errorf("member ticket reporter %s assignee %s", rep, asg)
	}
}

func TestAllocate(t *testing.T) {
	got := allocate(10, []float64{1, 1, 1}, []int{0, 0, 5})
	sort.Ints(got)
	if sum := got[0] + got[1] + got[2]; sum != 10 || got[2] < 5 {
		t.Errorf("allocate: %v", got)
	}
	if got := allocate(2, []float64{1, 1}, []int{3, 3}); got[0] != 3 || got[1] != 3 {
		t.Errorf("allocate below the minimum: %v", got)
	}
}

func BenchmarkGenerate(b *testing.B) {
	ctx := context.Background()
	for i := range b.N {
		st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), fmt.Sprintf("demo%d.sqlite", i)))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Generate(ctx, st, Options{Rows: DefaultRows}); err != nil {
			b.Fatal(err)
		}
		st.Close()
	}
	b.ReportMetric(float64(DefaultRows*b.N)/b.Elapsed().Seconds(), "objects/s")
}
