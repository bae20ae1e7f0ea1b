package query

import (
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
)

// Field denials: a field named against a class whose schema lacks it.
//
// The schema a caller parses against is the agent's view of the class
// (protected fields, fields outside the operator's allowlist and internal
// fields removed), so a field that does not exist and one hidden from the
// agent are both simply absent: DenyField builds one answer for both, from
// the view alone, so that the refusal tells nothing about what is hidden.

// MaxAllowedFields caps FieldDenial.Allowed; the message counts the rest.
const MaxAllowedFields = 20

// The kinds of FieldDenial.
const (
	KindFieldDenied = "field_denied"
	// KindStorageForm: the name was Parse-on-MongoDB's storage column of
	// a Pointer field of the view ("_p_owner"), never addressable; the
	// denial suggests the field itself.
	KindStorageForm = "storage_form_field_ref"
)

// storagePrefix starts MongoDB's storage name of a pointer field.
const storagePrefix = "_p_"

// FieldDenial is why an *Error refuses a field.
type FieldDenial struct {
	Field string // the name as given, without its "$"
	// Allowed are the first MaxAllowedFields of the view's fields
	// (ViewFields); More counts the others.
	Allowed []string
	More    int
	// Rewrite, for a storage-form name of a Pointer field of the view, is
	// what to name instead ("$owner" for "$_p_owner", "owner" for
	// "_p_owner").
	Rewrite string
}

// Kind is the denial's kind: KindStorageForm when it suggests a rewrite,
// otherwise KindFieldDenied.
func (d *FieldDenial) Kind() string {
	if d.Rewrite != "" {
		return KindStorageForm
	}
	return KindFieldDenied
}

// DenyField is the *Error refusing field, named at path at against s (the
// agent's view of the class; field is absent from it). prefix is "$" when
// the field was named as a reference ("$secret"), "" when as a key;
// field is the name without it, and only the name's first segment
// ("meta" of "meta.plan") counts.
func DenyField(s parse.Schema, field, at, prefix string) *Error {
	field, _, _ = strings.Cut(field, ".")
	all := ViewFields(s)
	d := &FieldDenial{Field: field, Allowed: all}
	if len(all) > MaxAllowedFields {
		d.Allowed, d.More = all[:MaxAllowedFields:MaxAllowedFields], len(all)-MaxAllowedFields
	}
	list := strings.Join(d.Allowed, ", ")
	if d.More > 0 {
		list += fmt.Sprintf(" (+%d more)", d.More)
	}
	if list == "" {
		list = "none"
	}
	msg := fmt.Sprintf("%q is not a field of %s this agent can use; its fields: %s", prefix+field, s.ClassName, list)
	if bare, ok := strings.CutPrefix(field, storagePrefix); ok {
		if f, found := s.Fields[bare]; found && f.Type == parse.TypePointer {
			d.Rewrite = prefix + bare
			msg = fmt.Sprintf("%q is the database's storage column of the Pointer field %q, which no query names; write %q instead. The fields of %s this agent can use: %s",
				prefix+field, bare, d.Rewrite, s.ClassName, list)
		}
	}
	return &Error{Path: at, Msg: msg, Denied: d}
}

// ViewFields lists the fields of s a query may name, in the order field
// denials list them: the class's own fields in alphabetical order, then
// objectId, createdAt and updatedAt (the ACL, which no query reads or
// compares, is left out).
func ViewFields(s parse.Schema) []string {
	names := s.FieldNames() // objectId, createdAt, updatedAt, ACL, then the rest sorted
	out := make([]string, 0, len(names))
	for _, n := range names {
		if _, ok := s.Fields[n]; ok && !parse.IsSystemField(n) {
			out = append(out, n)
		}
	}
	for _, n := range []string{parse.FieldObjectID, parse.FieldCreatedAt, parse.FieldUpdatedAt} {
		if _, ok := s.Fields[n]; ok {
			out = append(out, n)
		}
	}
	return out
}
