package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

func TestAuditMetadata(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "audit.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	class := func(name string, fields map[string]parse.FieldType) {
		s := parse.NewSchema(name)
		for f, ty := range fields {
			s.Fields[f] = parse.Field{Type: ty}
		}
		if ty, ok := fields["owner"]; ok && ty == parse.TypePointer {
			s.Fields["owner"] = parse.Field{Type: parse.TypePointer, TargetClass: parse.ClassUser}
		}
		if err := st.CreateClass(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	str, num := parse.TypeString, parse.TypeNumber
	class("Alpha", map[string]parse.FieldType{"a": str, "b": num, "owner": parse.TypePointer})
	class("Beta", map[string]parse.FieldType{"x": str, "y": num})
	class("Gamma", map[string]parse.FieldType{"secret": str})
	class("Delta", map[string]parse.FieldType{"d": str})
	class("Omega", nil)

	// The empty report has every key, with empty values.
	empty, err := AuditMetadata(ctx, nil, st)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(Report{MissingClassDescriptions: []string{}, MissingFieldDescriptions: map[string][]string{}, UnresolvableAllowlistEntries: map[string][]string{}, CanonicalFilterSummary: map[string]map[string]any{}})
	if string(js) != `{"classes_audited":0,"missing_class_descriptions":[],"missing_field_descriptions":{},"unresolvable_allowlist_entries":{},"canonical_filter_summary":{}}` {
		t.Errorf("empty report JSON = %s", js)
	}
	if empty.ClassesAudited != 5 || len(empty.MissingClassDescriptions) != 5 || len(empty.MissingFieldDescriptions) != 4 {
		t.Errorf("no policy: %+v", empty)
	}

	pol, err := Parse([]byte(`
classes:
  Alpha:
    description: First.
    agent_fields: [a, b, zz]
    join_fields: [a]
    large_fields: [b]
    fields: {a: {description: The a.}}
    canonical_filter: {b: {$gt: 1}}
    tenant: {field: tenantId}
  Gamma: {hidden: true}
  Delta:
    description: Fourth.
    fields: {d: {description: The d.}, e: {description: Not there.}}
  _User: {agent_fields: [nonsense]}
`), Options{Name: "audit.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := AuditMetadata(ctx, pol, st)
	if err != nil {
		t.Fatal(err)
	}
	want := Report{
		ClassesAudited:               4, // Alpha, Beta, Delta, Omega; Gamma is hidden, _User/_Role/_Session are system classes
		MissingClassDescriptions:     []string{"Beta", "Omega"},
		MissingFieldDescriptions:     map[string][]string{"Alpha": {"b"}, "Beta": {"x", "y"}},
		UnresolvableAllowlistEntries: map[string][]string{"Alpha": {"tenantId", "zz"}, "Delta": {"e"}},
		CanonicalFilterSummary:       map[string]map[string]any{"Alpha": {"b": map[string]any{"$gt": 1.0}}},
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if !r.HasGaps() || (Report{}).HasGaps() {
		t.Error("HasGaps")
	}
	js, _ = json.Marshal(r)
	wantJSON := `{"classes_audited":4,"missing_class_descriptions":["Beta","Omega"],"missing_field_descriptions":{"Alpha":["b"],"Beta":["x","y"]},"unresolvable_allowlist_entries":{"Alpha":["tenantId","zz"],"Delta":["e"]},"canonical_filter_summary":{"Alpha":{"b":{"$gt":1}}}}`
	if string(js) != wantJSON {
		t.Errorf("JSON:\n got %s\nwant %s", js, wantJSON)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	wantText := `Policy metadata audit
Classes audited: 4

Missing class descriptions (2):
  - Beta
  - Omega

Missing field descriptions (3 in 2 classes):
  Alpha (1): b
  Beta (2): x, y

Unresolvable allowlist entries (3 in 2 classes):
  Alpha (2): tenantId, zz
  Delta (1): e

Canonical filters (1):
  Alpha: {"b":{"$gt":1}}
`
	if diff := cmp.Diff(wantText, buf.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	buf.Reset()
	empty = Report{MissingClassDescriptions: []string{}, MissingFieldDescriptions: map[string][]string{}, UnresolvableAllowlistEntries: map[string][]string{}, CanonicalFilterSummary: map[string]map[string]any{}}
	_ = empty.WriteText(&buf)
	if want := "Policy metadata audit\nClasses audited: 0\n\nMissing class descriptions: none\n\nMissing field descriptions: none\n\nUnresolvable allowlist entries: none\n\nCanonical filters: none\n"; buf.String() != want {
		t.Errorf("empty text:\n%s", buf.String())
	}
}
