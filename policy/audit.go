package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// Report is what AuditMetadata finds. Every collection is non-nil, so its
// JSON form always carries every key.
type Report struct {
	// ClassesAudited counts the store's classes that were audited: every
	// class but the `_`-prefixed system classes and the hidden ones.
	ClassesAudited int `json:"classes_audited"`
	// MissingClassDescriptions lists audited classes without a
	// description, sorted.
	MissingClassDescriptions []string `json:"missing_class_descriptions"`
	// MissingFieldDescriptions maps a class to its fields without a
	// description: the agent_fields when the class has them, otherwise
	// every field of its schema, the four system fields excepted.
	MissingFieldDescriptions map[string][]string `json:"missing_field_descriptions"`
	// UnresolvableAllowlistEntries maps a class to the names its
	// agent_fields, join_fields, large_fields, fields and tenant field
	// give that its schema does not have (likely typos).
	UnresolvableAllowlistEntries map[string][]string `json:"unresolvable_allowlist_entries"`
	// CanonicalFilterSummary maps a class to its canonical filter.
	CanonicalFilterSummary map[string]map[string]any `json:"canonical_filter_summary"`
}

// HasGaps reports whether anything is missing or unresolvable.
func (r Report) HasGaps() bool {
	return len(r.MissingClassDescriptions) > 0 || len(r.MissingFieldDescriptions) > 0 || len(r.UnresolvableAllowlistEntries) > 0
}

// AuditMetadata compares the policy's class metadata with the store's
// schemas and reports what agents would see undocumented. pol may be nil
// (no metadata at all).
func AuditMetadata(ctx context.Context, pol *Policy, st store.Store) (Report, error) {
	r := Report{
		MissingClassDescriptions:     []string{},
		MissingFieldDescriptions:     map[string][]string{},
		UnresolvableAllowlistEntries: map[string][]string{},
		CanonicalFilterSummary:       map[string]map[string]any{},
	}
	schemas, err := st.Schemas(ctx)
	if err != nil {
		return r, fmt.Errorf("policy: read schemas: %w", err)
	}
	var cat *agent.Catalog
	if pol != nil {
		cat = pol.Catalog
	}
	for _, s := range schemas {
		cm := cat.Class(s.ClassName)
		if parse.IsSystemClass(s.ClassName) || cm != nil && cm.Hidden != "" && cm.Hidden != agent.HiddenNever {
			continue
		}
		r.ClassesAudited++
		if cm == nil {
			cm = &agent.ClassMeta{}
		}
		if cm.Description == "" {
			r.MissingClassDescriptions = append(r.MissingClassDescriptions, s.ClassName)
		}
		var unresolved []string
		note := func(f string) {
			if _, ok := s.Fields[f]; !ok && !slices.Contains(unresolved, f) {
				unresolved = append(unresolved, f)
			}
		}
		for _, list := range [][]string{cm.AgentFields, cm.JoinFields, cm.LargeFields} {
			for _, f := range list {
				note(f)
			}
		}
		for f := range cm.Fields {
			note(f)
		}
		if cm.Tenant != nil {
			note(cm.Tenant.Field)
		}
		if len(unresolved) > 0 {
			slices.Sort(unresolved)
			r.UnresolvableAllowlistEntries[s.ClassName] = unresolved
		}
		scope := cm.AgentFields
		if scope == nil {
			scope = s.FieldNames()
		}
		var missing []string
		for _, f := range scope {
			if _, ok := s.Fields[f]; !ok || parse.IsSystemField(f) {
				continue
			}
			if fm := cm.Fields[f]; fm == nil || fm.Description == "" {
				missing = append(missing, f)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			r.MissingFieldDescriptions[s.ClassName] = missing
		}
		if cm.CanonicalFilter != nil {
			r.CanonicalFilterSummary[s.ClassName], _ = parse.CloneJSON(cm.CanonicalFilter).(map[string]any)
		}
	}
	slices.Sort(r.MissingClassDescriptions)
	return r, nil
}

// WriteText writes the report for a person to read.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	b.WriteString("Policy metadata audit\n")
	fmt.Fprintf(&b, "Classes audited: %d\n", r.ClassesAudited)

	if n := len(r.MissingClassDescriptions); n == 0 {
		b.WriteString("\nMissing class descriptions: none\n")
	} else {
		fmt.Fprintf(&b, "\nMissing class descriptions (%d):\n", n)
		for _, c := range r.MissingClassDescriptions {
			fmt.Fprintf(&b, "  - %s\n", c)
		}
	}

	writeLists := func(title string, m map[string][]string) {
		if len(m) == 0 {
			fmt.Fprintf(&b, "\n%s: none\n", title)
			return
		}
		total := 0
		for _, fs := range m {
			total += len(fs)
		}
		fmt.Fprintf(&b, "\n%s (%d in %d %s):\n", title, total, len(m), plural(len(m), "class", "classes"))
		for _, c := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(&b, "  %s (%d): %s\n", c, len(m[c]), strings.Join(m[c], ", "))
		}
	}
	writeLists("Missing field descriptions", r.MissingFieldDescriptions)
	writeLists("Unresolvable allowlist entries", r.UnresolvableAllowlistEntries)

	if n := len(r.CanonicalFilterSummary); n == 0 {
		b.WriteString("\nCanonical filters: none\n")
	} else {
		fmt.Fprintf(&b, "\nCanonical filters (%d):\n", n)
		for _, c := range slices.Sorted(maps.Keys(r.CanonicalFilterSummary)) {
			js, _ := json.Marshal(r.CanonicalFilterSummary[c])
			fmt.Fprintf(&b, "  %s: %s\n", c, js)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
