package query

import (
	"slices"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
)

// The options of a find beside its where: the order and the keys.

// ParseOrder parses Parse's order string ("-createdAt,title") against s,
// the agent's view of the class (a field it lacks is a DenyField).
func ParseOrder(s parse.Schema, order string) ([]OrderKey, error) {
	var keys []OrderKey
	for _, part := range strings.Split(order, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if k, ok := scoreOrderKey(part); ok {
			keys = append(keys, k)
			continue
		}
		k := OrderKey{Field: part}
		if strings.HasPrefix(part, "-") {
			k = OrderKey{Field: part[1:], Desc: true}
		}
		if strings.HasPrefix(k.Field, "$") {
			return nil, notAField("order", k.Field)
		}
		if strings.Contains(k.Field, ".") {
			// A path into an Object field, as Parse Server sorts by it.
			path, err := (&whereParser{schema: s, view: true}).resolve(k.Field, "order")
			if err != nil {
				return nil, err
			}
			k.Field, k.Sub = path.Field, path.Sub
			keys = append(keys, k)
			continue
		}
		f, ok := s.Fields[k.Field]
		if !ok {
			return nil, DenyField(s, k.Field, "order", "")
		}
		switch f.Type {
		case parse.TypeRelation, parse.TypeACL, parse.TypeObject, parse.TypeArray, parse.TypeGeoPoint, parse.TypePolygon, parse.TypeBytes:
			return nil, errAt("order", "cannot sort by %s field %q", f.Type, k.Field)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// ParseKeys validates a keys projection against s, the agent's view of
// the class (a field it lacks is a DenyField). A dotted key ("owner.name")
// selects its first segment, which must be a Pointer (the rest applies to
// the included object) or an Object.
func ParseKeys(s parse.Schema, keys []string) ([]string, error) {
	if keys == nil {
		return nil, nil
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if k == ScoreKey {
			out = append(out, k)
			continue
		}
		if strings.HasPrefix(k, "$") {
			return nil, notAField("keys", k)
		}
		head, _, dotted := strings.Cut(k, ".")
		f, ok := s.Fields[head]
		if !ok {
			return nil, DenyField(s, head, "keys", "")
		}
		if dotted && f.Type != parse.TypePointer && f.Type != parse.TypeObject {
			return nil, errAt("keys", "%q: dotted keys reach into Pointer or Object fields; %q is %s", k, head, f.Type)
		}
		out = append(out, k)
	}
	return out, nil
}

// notAField refuses a "$name" in order or keys other than $score: no
// field is named so, so it is a mistake in the query, not a field denial.
func notAField(at, name string) error {
	return errAt(at, "%q is not a field name; of the names starting with $ only %s (the text search rank) may be named here", name, ScoreKey)
}

// StableOrder is keys with objectId appended as the final tie-breaker,
// unless keys already order by it: every backend returns rows whose sort
// keys are equal in objectId order, so pages are stable and two backends
// give the same page.
func StableOrder(keys []OrderKey) []OrderKey {
	for _, k := range keys {
		if k.Field == parse.FieldObjectID && len(k.Sub) == 0 {
			return keys
		}
	}
	return append(slices.Clip(keys), OrderKey{Field: parse.FieldObjectID})
}
