package policy

import (
	"context"
	"testing"
)

// introspection: true exposes describe_agent and would_permit to the
// profile's agent; a sub-agent keeps it only when it says so, and every
// other profile is without it.
func TestIntrospectionSwitch(t *testing.T) {
	pol, err := Parse([]byte(`agents:
  ops:
    identity: master
    permission: admin
    introspection: true
  ops-child:
    parent: ops
    permission: admin
    introspection: true
  ops-quiet:
    parent: ops
    permission: admin
  plain:
    identity: master
    permission: admin
`), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"ops": true, "ops-child": true, "ops-quiet": false, "plain": false} {
		a, err := pol.Agent(context.Background(), name, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.Policy.Introspection != want {
			t.Errorf("%s: introspection %v, want %v", name, a.Policy.Introspection, want)
		}
	}
}
