package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"

	segjson "github.com/segmentio/encoding/json"
)

// StringList is a list argument that also accepts a comma-separated string
// ("title,status"), as models often send one.
type StringList []string

// UnmarshalJSON accepts an array of strings or a comma-separated string.
func (l *StringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = StringList{}
		for _, part := range strings.Split(s, ",") {
			if p := strings.TrimSpace(part); p != "" {
				*l = append(*l, p)
			}
		}
		return nil
	}
	var arr []string
	if err := json.Unmarshal(b, &arr); err != nil {
		// A type error gets the argument's name filled in by the decoder.
		return &json.UnmarshalTypeError{Value: "value", Type: reflect.TypeFor[[]string]()}
	}
	*l = arr
	return nil
}

// Where is a where-constraint argument: a JSON object, or a string holding one.
type Where json.RawMessage

// UnmarshalJSON keeps the raw constraint.
func (w *Where) UnmarshalJSON(b []byte) error {
	*w = append((*w)[:0], b...)
	return nil
}

// MarshalJSON returns the constraint as given.
func (w Where) MarshalJSON() ([]byte, error) {
	if len(w) == 0 {
		return []byte("null"), nil
	}
	return []byte(w), nil
}

// object decodes the constraint to a map (nil when absent).
func (w Where) object() (map[string]any, error) {
	raw := bytes.TrimSpace(w)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, &Error{Code: CodeInvalidArgument, Message: "argument \"where\" is not valid JSON"}
		}
		raw = []byte(strings.TrimSpace(s))
		if len(raw) == 0 {
			return nil, nil
		}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &Error{Code: CodeInvalidArgument, Message: "argument \"where\" must be a JSON object of constraints, e.g. {\"status\":\"open\",\"total\":{\"$gte\":100}}", Details: map[string]any{"argument": "where"}}
	}
	return m, nil
}

// parse parses the constraint against the schema the agent sees of cls;
// other classes named by $inQuery/$select/$relatedTo resolve through the
// scope.
func (w Where) parse(ctx context.Context, cls *agent.Class) (query.Expr, map[string]any, error) {
	m, err := w.object()
	if err != nil {
		return nil, nil, err
	}
	e, err := cls.Where(ctx, m)
	return e, m, err
}

// JSONObject is an object argument; a string holding a JSON object is
// accepted too, as models often send one.
type JSONObject map[string]any

// UnmarshalJSON accepts a JSON object or a string holding one.
func (o *JSONObject) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		b = []byte(strings.TrimSpace(s))
	}
	if string(b) == "null" {
		*o = nil
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		// A type error gets the argument's name filled in by the decoder.
		return &json.UnmarshalTypeError{Value: "value", Type: reflect.TypeFor[map[string]any]()}
	}
	*o = m
	return nil
}

var whereSchema = &jsonschema.Schema{
	Type:        "object",
	Description: "Parse where; see " + QueryLanguageURI,
	Examples:    []any{map[string]any{"status": "open", "priority": map[string]any{"$gte": 3}}},
}

// whereRef is the where argument of the tools after query_class, whose
// example shows it.
var whereRef = &jsonschema.Schema{Type: "object", Description: "see query_class"}

// intSchema is an integer argument with its bounds and default.
func intSchema(desc string, lo, hi, def int) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Description: desc, Minimum: jsonschema.Ptr(float64(lo)), Maximum: jsonschema.Ptr(float64(hi)), Default: mustJSON(def)}
}

// enumSchema is a string argument taking one of values (the first is the
// default when def is set).
func enumSchema(desc string, def string, values ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string", Description: desc}
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}

	if def != "" {
		s.Default = mustJSON(def)
	}
	return s
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

var (
	keysSchema      = listSchema("only these fields")
	includeSchema   = listSchema("Pointers to inline")
	canonicalSchema = &jsonschema.Schema{Type: "boolean", Default: mustJSON(true)}
	objectIDSchema  = &jsonschema.Schema{Type: "string"}
)

// orderRef is the order argument of the tools after query_class.
var orderRef = &jsonschema.Schema{Type: "string", Description: "see query_class"}

// skipSchema is the skip argument of the paged tools.
var skipSchema = &jsonschema.Schema{Type: "integer", Minimum: jsonschema.Ptr(0.0)}

// orderSchema is the order argument of the find-shaped tools.
var orderSchema = &jsonschema.Schema{Type: "string", Description: "sort keys, - descending", Examples: []any{"-createdAt,title"}}

func listSchema(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}, Description: desc}
}

func argErr(arg, format string, a ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q ", arg) + fmt.Sprintf(format, a...), Details: map[string]any{"argument": arg}}
}

// skipArg checks the skip argument of a paged tool.
func skipArg(skip int) error {
	if skip < 0 || skip > MaxSkip {
		return argErr("skip", "must be between 0 and %d", MaxSkip)
	}
	return nil
}

func argRequired(name string) *Error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q is required", name), Details: map[string]any{"argument": name}}
}

func intArg(name string, v *int, def, lo, hi int) (int, error) {
	if v == nil {
		return def, nil
	}
	if *v < lo || *v > hi {
		return 0, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q must be between %d and %d, got %d", name, lo, hi, *v), Details: map[string]any{"argument": name, "min": lo, "max": hi}}
	}
	return *v, nil
}

// openClass resolves a class_name argument through the scope, once per
// operation: the tool parses its arguments against the class's schema
// and runs its find, count or get on it (agent.Class).
func openClass(ctx context.Context, s *agent.Scope, class string) (*agent.Class, error) {
	if strings.TrimSpace(class) == "" {
		return nil, &Error{Code: CodeInvalidArgument, Message: "argument \"class_name\" is required", Details: map[string]any{"argument": "class_name"}}
	}
	return s.Class(ctx, class)
}

// classSchema is the schema the agent sees of a class_name argument, for
// a tool that reads no rows of it.
func classSchema(ctx context.Context, s *agent.Scope, class string) (parse.Schema, error) {
	cls, err := openClass(ctx, s, class)
	if err != nil {
		return parse.Schema{}, err
	}
	return cls.Schema, nil
}

// classObject checks the class_name and object_id arguments of a tool
// that acts on one object and returns the class's schema.
func classObject(ctx context.Context, s *agent.Scope, class, id string) (parse.Schema, error) {
	cls, err := openObject(ctx, s, class, id)
	if err != nil {
		return parse.Schema{}, err
	}
	return cls.Schema, nil
}

// openObject is openClass for a tool that acts on one object: the
// object_id argument is checked too.
func openObject(ctx context.Context, s *agent.Scope, class, id string) (*agent.Class, error) {
	cls, err := openClass(ctx, s, class)
	if err != nil {
		return nil, err
	}
	if err := validID("object_id", id); err != nil {
		return nil, err
	}
	return cls, nil
}

func validID(arg, id string) error {
	if !parse.ValidObjectID(id) {
		return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q: %q is not an objectId (letters and digits)", arg, id), Details: map[string]any{"argument": arg}}
	}
	return nil
}

// canonicalScope is the scope a call runs in: the caller may opt out of
// the classes' canonical filters, never out of anything else.
func canonicalScope(s *agent.Scope, apply *bool) *agent.Scope {
	if apply != nil && !*apply {
		return s.WithoutCanonicalFilter()
	}
	return s
}

// findSpec is the validated where, order, limit and skip of a find-shaped
// tool (query_class, explain_query, export_data).
type findSpec struct {
	where    query.Expr
	whereObj map[string]any
	order    []query.OrderKey
	limit    int
	skip     int
}

func parseFind(ctx context.Context, cls *agent.Class, w Where, order string, limit *int, def, max, skip int) (findSpec, error) {
	var f findSpec
	var err error
	if f.limit, err = intArg("limit", limit, def, 1, max); err != nil {
		return f, err
	}
	if err := skipArg(skip); err != nil {
		return f, err
	}
	f.skip = skip
	if f.where, f.whereObj, err = w.parse(ctx, cls); err != nil {
		return f, err
	}
	f.order, err = query.ParseOrder(cls.Schema, order)
	return f, err
}

// decodeArgs strictly decodes a tool's arguments into T: unknown
// arguments and wrong types are invalid_argument errors naming the argument.
//
// Arguments are decoded by the JSON library the SDK uses (segmentio), with
// encoding/json's rules (member names matched in any case, unknown ones
// refused); when that fails, encoding/json decodes them again, for the
// error it words (segmentio's type errors do not name the field).
// args_test.go holds the two to the same answers.
func decodeArgs[T any](raw json.RawMessage) (T, error) {
	var v T
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if _, err := segjson.Parse(raw, &v, segjson.DisallowUnknownFields); err == nil {
		return v, nil
	}
	return decodeArgsStd[T](raw)
}

// decodeArgsStd is decodeArgs by encoding/json, and its errors.
func decodeArgsStd[T any](raw json.RawMessage) (T, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		var ute *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &ute):
			return v, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q must be %s, got a JSON %s", ute.Field, jsonKind(ute.Type.Kind().String()), ute.Value), Details: map[string]any{"argument": ute.Field}}
		case errors.As(err, &se):
			return v, Errorf(CodeInvalidArgument, "arguments are not valid JSON: %v", err)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return v, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("unknown argument %q", name), Details: map[string]any{"argument": name}}
		}
		return v, Errorf(CodeInvalidArgument, "invalid arguments: %v", err)
	}
	return v, nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return goKind
}
