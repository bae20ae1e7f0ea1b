package parse_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// readableBy is the in-memory read rule as live visibility applies it: the
// row's REST ACL turned into its _rperm (parse.PermsOf), admitted by the
// caller's ACL filter.
func readableBy(acl any, entries []string) bool {
	rperm, _ := parse.PermsOf(acl)
	return query.ACLEntries(entries...).Admits(rperm)
}

func restACL(t *testing.T, js string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// ReadableBy is the in-memory read rule (live notifications, every
// visibility decision made without the database): only a "read": true
// entry the caller holds grants read. A write-only entry does not.
func TestReadableBy(t *testing.T) {
	bob := []string{"*", "bob", "role:Staff"}
	cases := []struct {
		name    string
		acl     string
		entries []string
		want    bool
	}{
		{"no ACL is public", `null`, bob, true},
		{"no ACL, no entries", `null`, nil, true},
		{"empty ACL is master-only", `{}`, bob, false},
		{"public read", `{"*":{"read":true}}`, bob, true},
		{"public read, anonymous", `{"*":{"read":true}}`, []string{"*"}, true},
		{"public write only", `{"*":{"write":true}}`, bob, false},
		{"own write only", `{"bob":{"write":true}}`, bob, false},
		{"own read and write", `{"bob":{"read":true,"write":true}}`, bob, true},
		{"read false", `{"bob":{"read":false,"write":true}}`, bob, false},
		{"role read", `{"role:Staff":{"read":true}}`, bob, true},
		{"role write only", `{"role:Staff":{"write":true}}`, bob, false},
		{"another user's read", `{"alice":{"read":true}}`, bob, false},
		{"another role's read", `{"role:Admin":{"read":true}}`, bob, false},
		{"role name is not the user", `{"role:bob":{"read":true}}`, []string{"*", "bob"}, false},
		{"read as a string", `{"bob":{"read":"true"}}`, bob, false},
		{"entry not an object", `{"bob":true}`, bob, false},
		{"ACL not an object", `["bob"]`, bob, false},
		{"ACL a string", `"public"`, bob, false},
		{"no entries held", `{"*":{"read":true}}`, nil, false},
	}
	for _, c := range cases {
		if got := readableBy(restACL(t, c.acl), c.entries); got != c.want {
			t.Errorf("%s: ReadableBy(%s, %v) = %t, want %t", c.name, c.acl, c.entries, got, c.want)
		}
	}
}

// ReadableBy agrees with the stored form: an ACL grants read to an entry
// exactly when its _rperm holds the entry (or it has none).
func TestReadableByAgreesWithPerms(t *testing.T) {
	acls := []string{`{}`, `{"*":{"read":true}}`, `{"*":{"write":true}}`, `{"bob":{"read":true},"alice":{"write":true}}`,
		`{"role:Staff":{"read":true,"write":true}}`, `{"alice":{"read":true,"write":true},"bob":{"write":true}}`}
	for _, js := range acls {
		acl, err := parse.ParseACL(restACL(t, js))
		if err != nil {
			t.Fatal(err)
		}
		rperm, _ := acl.Perms()
		for _, e := range []string{"*", "bob", "alice", "role:Staff"} {
			stored := false
			for _, r := range rperm {
				stored = stored || r == e
			}
			if got := readableBy(restACL(t, js), []string{e}); got != stored {
				t.Errorf("%s for %s: ReadableBy %t, _rperm %v", js, e, got, rperm)
			}
		}
	}
}

func TestParseACL(t *testing.T) {
	acl, err := parse.ParseACL(restACL(t, `{"*":{"read":true},"bob":{"read":true,"write":true},"role:Admin":{"write":true},"x":{"read":false}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := parse.ACL{"*": {Read: true}, "bob": {Read: true, Write: true}, "role:Admin": {Write: true}, "x": {}}
	if d := cmp.Diff(want, acl); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if acl, err := parse.ParseACL(nil); err != nil || acl != nil {
		t.Fatalf("ParseACL(nil) = %v, %v; want no ACL", acl, err)
	}
	bad := map[string]string{
		`[]`:                          "ACL must be an object of entries",
		`"x"`:                         "ACL must be an object of entries",
		`{"":{"read":true}}`:          "empty entry name",
		`{"bob":true}`:                `ACL entry "bob" must be an object`,
		`{"bob":{"read":"yes"}}`:      `ACL entry "bob".read must be a boolean`,
		`{"bob":{"delete":true}}`:     `unknown permission "delete"`,
		`{"bob":{"read":true,"x":1}}`: `ACL entry "bob"`,
	}
	for js, msg := range bad {
		_, err := parse.ParseACL(restACL(t, js))
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseACL(%s) = %v, want an error containing %q", js, err, msg)
		}
	}
}

// The stored form (_rperm/_wperm) keeps read and write apart, sorted, and
// round-trips through ACLFromPerms and Encode.
func TestACLPerms(t *testing.T) {
	acl := parse.ACL{"role:Admin": {Write: true}, "bob": {Read: true, Write: true}, "*": {Read: true}, "none": {}}
	rperm, wperm := acl.Perms()
	if d := cmp.Diff([]string{"*", "bob"}, rperm); d != "" {
		t.Errorf("_rperm (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"bob", "role:Admin"}, wperm); d != "" {
		t.Errorf("_wperm (-want +got):\n%s", d)
	}
	back := parse.ACLFromPerms(rperm, wperm)
	delete(acl, "none") // an entry with no rights is not stored
	if d := cmp.Diff(acl, back); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	enc := back.Encode()
	want := map[string]any{"*": map[string]any{"read": true}, "bob": map[string]any{"read": true, "write": true}, "role:Admin": map[string]any{"write": true}}
	if d := cmp.Diff(want, enc); d != "" {
		t.Errorf("Encode (-want +got):\n%s", d)
	}

	if r, w := parse.ACL(nil).Perms(); r != nil || w != nil {
		t.Errorf("no ACL: Perms %v %v, want nil (no restriction)", r, w)
	}
	if r, w := (parse.ACL{}).Perms(); r == nil || w == nil || len(r)+len(w) != 0 {
		t.Errorf("empty ACL: Perms %#v %#v, want empty non-nil (nobody)", r, w)
	}
	if a := parse.ACLFromPerms(nil, nil); a != nil {
		t.Errorf("ACLFromPerms(nil, nil) = %v, want no ACL", a)
	}
	if a := parse.ACLFromPerms([]string{}, nil); a == nil || len(a) != 0 {
		t.Errorf("ACLFromPerms([], nil) = %#v, want an empty ACL (master only)", a)
	}
	if parse.ACL(nil).Encode() != nil {
		t.Error("no ACL encodes as nil")
	}
}

func TestRoleEntry(t *testing.T) {
	if e := parse.RoleEntry("Admin"); e != "role:Admin" || !parse.IsRoleEntry(e) {
		t.Fatalf("RoleEntry(Admin) = %q", e)
	}
	for _, e := range []string{"*", "bob", "Role:Admin", "roleAdmin"} {
		if parse.IsRoleEntry(e) {
			t.Errorf("IsRoleEntry(%q)", e)
		}
	}
}

// PermsOf turns a REST ACL into its stored permission columns; a filter of
// the entries a caller holds admits the row when _rperm names one of them.
func ExamplePermsOf() {
	acl := map[string]any{"role:Staff": map[string]any{"read": true}, "bob": map[string]any{"write": true}}
	rperm, wperm := parse.PermsOf(acl)
	fmt.Println(rperm, wperm)
	fmt.Println(query.ACLEntries("*", "alice", "role:Staff").Admits(rperm))
	fmt.Println(query.ACLEntries("*", "bob").Admits(rperm)) // write does not grant read
	rperm, _ = parse.PermsOf(nil)
	fmt.Println(query.ACLEntries("*").Admits(rperm)) // no ACL: public
	// Output:
	// [role:Staff] [bob]
	// true
	// false
	// true
}
