package policy

import (
	_ "embed"
	"strings"
)

//go:embed demo.yaml
var demoYAML []byte

// DemoSource returns the text of the built-in demo policy.
func DemoSource() []byte { return append([]byte(nil), demoYAML...) }

// Demo returns the built-in policy of the demo dataset: profiles admin
// (master key, admin tier, key "demo-admin"), analyst (read-only, roles
// Manager and org-acme, bound to tenant Acme, the default agent, key
// "demo-analyst") and support (write tier, the fixture user "support",
// tickets/comments/customers/projects only, no export_data, key
// "demo-support"), metadata for every demo class and four declared
// methods. Its keys are public; the warnings about literal keys are left
// out.
func Demo() (*Policy, error) {
	p, err := Parse(demoYAML, Options{Name: "demo.yaml"})
	if err != nil {
		return nil, err
	}
	kept := p.Warnings[:0]
	for _, w := range p.Warnings {
		if !strings.Contains(w, "a literal key is readable") {
			kept = append(kept, w)
		}
	}
	p.Warnings = kept
	return p, nil
}
