package policy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

// hidden: false on a class parsemcp hides by default unhides it, with a
// warning; on any other class it is the default and says nothing.
func TestUnhideSystemClass(t *testing.T) {
	src := "classes:\n  _Session: {hidden: false}\n  _JobStatus: {hidden: except_master}\n  Ticket: {hidden: false}\n"
	pol, err := Parse([]byte(src), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := pol.Catalog.Class("_Session").Hidden; got != agent.HiddenNever {
		t.Errorf("_Session hidden = %q, want %q", got, agent.HiddenNever)
	}
	if got := pol.Catalog.Class("_JobStatus").Hidden; got != agent.HiddenExceptMaster {
		t.Errorf("_JobStatus hidden = %q", got)
	}
	if got := pol.Catalog.Class("Ticket").Hidden; got != "" {
		t.Errorf("Ticket hidden = %q", got)
	}
	if len(pol.Warnings) != 1 || !strings.Contains(pol.Warnings[0], "classes._Session.hidden: unhides _Session") {
		t.Errorf("warnings: %q", pol.Warnings)
	}
}

func TestDefaultACL(t *testing.T) {
	src := `classes:
  Ticket:
    default_acl:
      "role:org-{tenant.slug}": {read: true, write: true}
      "{user}": {read: true, write: true}
      "*": {read: true}
`
	pol, err := Parse([]byte(src), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]parse.Perm{"role:org-{tenant.slug}": {Read: true, Write: true}, "{user}": {Read: true, Write: true}, "*": {Read: true}}
	if d := cmp.Diff(want, pol.Catalog.Class("Ticket").DefaultACL); d != "" {
		t.Errorf("default_acl (-want +got):\n%s", d)
	}
	for _, bad := range []string{`"{owner}"`, `"role:"`, `"role:org-{tenant.}"`, `"user:x"`, `"role:{nope}"`} {
		_, err := Parse([]byte("classes:\n  Ticket:\n    default_acl:\n      "+bad+": {read: true}\n"), testOptions())
		if err == nil || !strings.Contains(err.Error(), "default_acl") {
			t.Errorf("default_acl entry %s: err %v", bad, err)
		}
	}
}
