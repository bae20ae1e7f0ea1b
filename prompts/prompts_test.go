package prompts

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/parse"
)

// fakeEnv is the list of schemas an agent may see.
type fakeEnv []parse.Schema

func (e fakeEnv) Schemas(context.Context) ([]parse.Schema, error) { return e, nil }

type errEnv struct{ err error }

func (e errEnv) Schemas(context.Context) ([]parse.Schema, error) { return nil, e.err }

func schema(class string, fields map[string]parse.Field) parse.Schema {
	s := parse.NewSchema(class)
	maps.Copy(s.Fields, fields)
	return s
}

func ptr(target string) parse.Field { return parse.Field{Type: parse.TypePointer, TargetClass: target} }
func rel(target string) parse.Field {
	return parse.Field{Type: parse.TypeRelation, TargetClass: target}
}

// visibleEnv is what the test agent may see. "Secret" exists in the
// application but is hidden from it: only the fields that reference it
// remain, as a careless Env might leave them.
func visibleEnv() fakeEnv {
	return fakeEnv{
		schema("Ticket", map[string]parse.Field{
			"title":    {Type: parse.TypeString},
			"status":   {Type: parse.TypeString},
			"estimate": {Type: parse.TypeNumber},
			"done":     {Type: parse.TypeBoolean},
			"due":      {Type: parse.TypeDate},
			"tags":     {Type: parse.TypeArray},
			"meta":     {Type: parse.TypeObject},
			"project":  ptr("Project"),
			"origin":   ptr("Project"),
			"author":   ptr(parse.ClassUser),
			"audit":    ptr("Secret"),
			"watchers": rel(parse.ClassUser),
		}),
		schema("Project", map[string]parse.Field{
			"name":    {Type: parse.TypeString},
			"members": rel(parse.ClassUser),
			"vault":   rel("Secret"),
		}),
		schema(parse.ClassUser, map[string]parse.Field{"username": {Type: parse.TypeString}}),
		schema("Tag", map[string]parse.Field{"label": {Type: parse.TypeString}}),
	}
}

var validArgs = map[string]map[string]string{
	"class_overview":    {"class_name": "Ticket"},
	"count_by":          {"class_name": "Ticket", "group_by": "status"},
	"created_in_range":  {"class_name": "Ticket", "since": "2025-05-01"},
	"explore_database":  {},
	"find_relationship": {"parent_class": "Project", "parent_id": "pApollo001", "child_class": "Ticket", "pointer_field": "project"},
	"parse_conventions": {},
	"parse_relations":   {},
	"recent_activity":   {"class_name": "Ticket", "limit": "3"},
}

func builtin(t *testing.T, name string) Prompt {
	t.Helper()
	for _, p := range Builtin() {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no built-in %s", name)
	return Prompt{}
}

func render(t *testing.T, name string, args map[string]string) (Rendered, error) {
	t.Helper()
	return builtin(t, name).Render(context.Background(), visibleEnv(), args)
}

func mustRender(t *testing.T, name string, args map[string]string) Rendered {
	t.Helper()
	r, err := render(t, name, args)
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return r
}

func argError(t *testing.T, err error, arg string) *ArgError {
	t.Helper()
	var ae *ArgError
	if !errors.As(err, &ae) {
		t.Fatalf("want *ArgError for %s, got %T %v", arg, err, err)
	}
	if ae.Arg != arg {
		t.Fatalf("ArgError names %q, want %q (%v)", ae.Arg, arg, ae)
	}
	return ae
}

func with(base map[string]string, kv ...string) map[string]string {
	out := maps.Clone(base)
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func TestBuiltinCatalog(t *testing.T) {
	want := []string{"class_overview", "count_by", "created_in_range", "explore_database", "find_relationship", "parse_conventions", "parse_relations", "recent_activity"}
	var names []string
	for _, p := range Builtin() {
		names = append(names, p.Name)
		if d := p.Description; d == "" || !strings.HasSuffix(d, ".") || strings.Contains(d, "\n") || strings.Count(d, ". ") > 0 {
			t.Errorf("%s: description should be one sentence: %q", p.Name, d)
		}
		for _, a := range p.Args {
			if a.Description == "" {
				t.Errorf("%s.%s: no description", p.Name, a.Name)
			}
		}
		if err := validate(p); err != nil {
			t.Error(err)
		}
	}
	if !slices.Equal(names, want) {
		t.Fatalf("Builtin() = %v, want %v", names, want)
	}
	required := map[string][]string{}
	for _, p := range Builtin() {
		for _, a := range p.Args {
			if a.Required {
				required[p.Name] = append(required[p.Name], a.Name)
			}
		}
	}
	wantReq := map[string][]string{
		"class_overview":    {"class_name"},
		"count_by":          {"class_name", "group_by"},
		"created_in_range":  {"class_name", "since"},
		"find_relationship": {"parent_class", "parent_id", "child_class", "pointer_field"},
		"recent_activity":   {"class_name"},
	}
	if !maps.EqualFunc(required, wantReq, slices.Equal[[]string]) {
		t.Fatalf("required args %v, want %v", required, wantReq)
	}
}

func TestEveryBuiltinRenders(t *testing.T) {
	for _, p := range Builtin() {
		a, ok := validArgs[p.Name]
		if !ok {
			t.Fatalf("no valid args for %s", p.Name)
		}
		r, err := p.Render(context.Background(), visibleEnv(), a)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if strings.TrimSpace(r.Text) == "" || r.Description == "" {
			t.Fatalf("%s: empty rendering %+v", p.Name, r)
		}
		if strings.Contains(r.Text, "Secret") || strings.Contains(r.Description, "Secret") {
			t.Errorf("%s names the hidden class:\n%s", p.Name, r.Text)
		}
		// nil args behave like an empty map
		if len(a) == 0 {
			if _, err := p.Render(context.Background(), visibleEnv(), nil); err != nil {
				t.Errorf("%s with nil args: %v", p.Name, err)
			}
		}
	}
}

func TestTextsNameToolsAndArguments(t *testing.T) {
	old := now
	now = func() time.Time { return time.Date(2025, 6, 10, 12, 30, 15, 999, time.UTC) }
	defer func() { now = old }()

	cases := []struct {
		name string
		args map[string]string
		want []string
	}{
		{"parse_conventions", nil, []string{"objectId", "ISO-8601", `"__type":"Date"`, `"__type":"Pointer"`, `"__type":"File"`, `"__type":"GeoPoint"`, `"__type":"Bytes"`, `"__type":"Polygon"`, "_User", "_Role", "_Session", "_rperm", "$in", "$exists", "$regex", "$or", "include", "keys", "order", "1000"}},
		{"explore_database", nil, []string{"You can see 4 classes: Project, Tag, Ticket, _User.", "get_all_schemas {}", `count_objects {"class_name":"<class>"}`, "get_sample_objects"}},
		{"class_overview", validArgs["class_overview"], []string{
			`get_schema {"class_name":"Ticket"}`, `count_objects {"class_name":"Ticket"}`, `get_sample_objects {"class_name":"Ticket","limit":5}`,
			`query_class {"class_name":"Ticket","keys":["createdAt"],"limit":1,"order":"-createdAt"}`,
			"Pointer fields: author → _User, origin → Project, project → Project.", `{"include":["author","origin","project"]}`,
		}},
		{"count_by", validArgs["count_by"], []string{
			`group_by {"class_name":"Ticket","field":"status","operation":"count"}`, `list_tools {"category":"aggregate"}`,
			`count_objects {"class_name":"Ticket","where":{"status":"<value>"}}`, `count_objects {"class_name":"Ticket","where":{"status":{"$exists":false}}}`,
		}},
		{"count_by", map[string]string{"class_name": "Ticket", "group_by": "done"}, []string{
			`count_objects {"class_name":"Ticket","where":{"done":true}}`, `count_objects {"class_name":"Ticket","where":{"done":false}}`,
		}},
		{"count_by", map[string]string{"class_name": "Ticket", "group_by": "project"}, []string{
			`count_objects {"class_name":"Ticket","where":{"project":{"__type":"Pointer","className":"Project","objectId":"<objectId>"}}}`,
			`get_objects {"class_name":"Project","ids":`,
		}},
		{"count_by", map[string]string{"class_name": "Ticket", "group_by": "estimate"}, []string{`{"estimate":{"$gte":<low>,"$lt":<high>}}`}},
		{"count_by", map[string]string{"class_name": "Ticket", "group_by": "tags"}, []string{`"order":"objectId"`, `{"tags":"<element>"}`, `group_by {"class_name":"Ticket","field":"tags","flatten_arrays":true,"operation":"count"}`}},
		{"count_by", map[string]string{"class_name": "Ticket", "group_by": "due"}, []string{`{"due":{"$gte":{"__type":"Date","iso":"<period start>"},"$lt":{"__type":"Date","iso":"<period end>"}}}`}},
		{"recent_activity", validArgs["recent_activity"], []string{
			`query_class {"class_name":"Ticket","limit":3,"order":"-createdAt"}`,
			"The time now is 2025-06-10T12:30:15.000Z.",
			`count_objects {"class_name":"Ticket","where":{"createdAt":{"$gte":{"__type":"Date","iso":"2025-06-09T12:30:15.000Z"}}}}`,
			`{"$gte":{"__type":"Date","iso":"2025-06-03T12:30:15.000Z"}}`,
		}},
		{"recent_activity", map[string]string{"class_name": "Ticket"}, []string{`"limit":10`}},
		{"find_relationship", validArgs["find_relationship"], []string{
			`get_object {"class_name":"Project","object_id":"pApollo001"}`,
			`count_objects {"class_name":"Ticket","where":{"project":{"__type":"Pointer","className":"Project","objectId":"pApollo001"}}}`,
			`query_class {"class_name":"Ticket","limit":20,"order":"-createdAt","where":{"project":{"__type":"Pointer","className":"Project","objectId":"pApollo001"}}}`,
			"Other fields of Ticket also point to Project: origin.",
		}},
		{"created_in_range", validArgs["created_in_range"], []string{
			`count_objects {"class_name":"Ticket","where":{"createdAt":{"$gte":{"__type":"Date","iso":"2025-05-01T00:00:00.000Z"}}}}`,
			"until now",
		}},
		{"created_in_range", map[string]string{"class_name": "Ticket", "since": "2025-05-01T08:00:00+02:00", "until": "2025-05-02"}, []string{
			`count_objects {"class_name":"Ticket","where":{"createdAt":{"$gte":{"__type":"Date","iso":"2025-05-01T06:00:00.000Z"},"$lt":{"__type":"Date","iso":"2025-05-02T00:00:00.000Z"}}}}`,
			`"order":"-createdAt"`,
		}},
	}
	for _, c := range cases {
		r := mustRender(t, c.name, c.args)
		for _, w := range c.want {
			if !strings.Contains(r.Text, w) {
				t.Errorf("%s %v: text lacks %q:\n%s", c.name, c.args, w, r.Text)
			}
		}
	}
}

func TestMissingRequiredArgs(t *testing.T) {
	for _, p := range Builtin() {
		for _, a := range p.Args {
			if !a.Required {
				continue
			}
			for _, blank := range []bool{false, true} {
				args := maps.Clone(validArgs[p.Name])
				if blank {
					args[a.Name] = "  "
				} else {
					delete(args, a.Name)
				}
				_, err := p.Render(context.Background(), visibleEnv(), args)
				ae := argError(t, err, a.Name)
				if ae.Msg != msgRequired {
					t.Errorf("%s without %s: %q", p.Name, a.Name, ae.Msg)
				}
				if !strings.Contains(err.Error(), a.Name) || !strings.Contains(err.Error(), "required") {
					t.Errorf("%s: unclear message %q", p.Name, err)
				}
			}
		}
	}
	// Missing arguments are reported before the Env is consulted.
	_, err := builtin(t, "count_by").Render(context.Background(), errEnv{errors.New("boom")}, map[string]string{"class_name": "Ticket"})
	argError(t, err, "group_by")
}

func TestInvalidArgs(t *testing.T) {
	ra := validArgs["recent_activity"]
	for _, bad := range []string{"0", "101", "-1", "abc", "5.5", "1e2", "10 rows"} {
		_, err := render(t, "recent_activity", with(ra, "limit", bad))
		argError(t, err, "limit")
	}
	for _, ok := range []string{"1", "100", " 42 ", ""} {
		mustRender(t, "recent_activity", with(ra, "limit", ok))
	}

	cr := validArgs["created_in_range"]
	for _, bad := range []string{"yesterday", "2025-13-01", "2025-05-32", "05/01/2025", "2025-05-01 10:00"} {
		_, err := render(t, "created_in_range", with(cr, "since", bad))
		argError(t, err, "since")
		_, err = render(t, "created_in_range", with(cr, "until", bad))
		argError(t, err, "until")
	}
	for _, until := range []string{"2025-05-01", "2025-04-30T23:59:59Z", "2025-05-01T02:00:00+02:00"} {
		_, err := render(t, "created_in_range", with(cr, "until", until))
		if ae := argError(t, err, "until"); !strings.Contains(ae.Msg, "after since") {
			t.Errorf("until %s: %q", until, ae.Msg)
		}
	}
	for _, ok := range []string{"2025-05-01T00:00:00.001Z", "2025-06-01", "2025-05-01T10:00:00Z", "2025-05-01T10:00:00"} {
		mustRender(t, "created_in_range", with(cr, "until", ok))
	}

	fr := validArgs["find_relationship"]
	for _, c := range []struct{ arg, val, msg string }{
		{"parent_id", "not an id!", "not an objectId"},
		{"pointer_field", "nope", `class Ticket has no field "nope"`},
		{"pointer_field", "title", "is a String field, not a Pointer"},
		{"pointer_field", "watchers", "is a Relation field, not a Pointer"},
		{"pointer_field", "author", "Ticket.author points to _User, not Project"},
	} {
		_, err := render(t, "find_relationship", with(fr, c.arg, c.val))
		if ae := argError(t, err, c.arg); !strings.Contains(ae.Msg, c.msg) {
			t.Errorf("%s=%s: %q, want %q", c.arg, c.val, ae.Msg, c.msg)
		}
	}

	cb := validArgs["count_by"]
	for _, c := range []struct{ val, msg string }{
		{"nope", `class Ticket has no field "nope"`},
		{"meta", "it is a Object field"},
		{"watchers", "it is a Relation field"},
		{"ACL", "it is a ACL field"},
	} {
		_, err := render(t, "count_by", with(cb, "group_by", c.val))
		if ae := argError(t, err, "group_by"); !strings.Contains(ae.Msg, c.msg) {
			t.Errorf("group_by=%s: %q, want %q", c.val, ae.Msg, c.msg)
		}
	}
	for _, f := range []string{"status", "estimate", "done", "due", "tags", "project", "createdAt", "objectId"} {
		mustRender(t, "count_by", with(cb, "group_by", f))
	}
}

// classArgs lists, per prompt, the arguments that name a class.
var classArgs = map[string][]string{
	"class_overview":    {"class_name"},
	"count_by":          {"class_name"},
	"created_in_range":  {"class_name"},
	"find_relationship": {"parent_class", "child_class"},
	"recent_activity":   {"class_name"},
	"parse_relations":   {"classes"},
}

// An unknown class and one the agent cannot see fail the same way, so
// prompts cannot probe for hidden classes.
func TestHiddenClassLooksUnknown(t *testing.T) {
	// Secret exists in the application; the agent's Env does not list it.
	full := append(visibleEnv(), schema("Secret", map[string]parse.Field{"code": {Type: parse.TypeString}}))
	for name, argNames := range classArgs {
		for _, arg := range argNames {
			var msgs []string
			for _, class := range []string{"Secret", "Nosuch"} {
				_, err := render(t, name, with(validArgs[name], arg, class))
				ae := argError(t, err, arg)
				if want := fmt.Sprintf("unknown class %q", class); ae.Msg != want {
					t.Errorf("%s %s=%s: %q, want %q", name, arg, class, ae.Msg, want)
				}
				msgs = append(msgs, strings.ReplaceAll(err.Error(), class, "X"))
			}
			if msgs[0] != msgs[1] {
				t.Errorf("%s %s: hidden %q vs unknown %q", name, arg, msgs[0], msgs[1])
			}
			// With Secret visible, the same argument is accepted (or fails
			// for some other reason than the class).
			_, err := builtin(t, name).Render(context.Background(), full, with(validArgs[name], arg, "Secret"))
			var ae *ArgError
			if errors.As(err, &ae) && strings.Contains(ae.Msg, "unknown class") {
				t.Errorf("%s %s=Secret with Secret visible: %v", name, arg, err)
			}
		}
	}
	// Fields that point into the hidden class behave like missing fields.
	for _, c := range []struct {
		name, arg string
		args      map[string]string
	}{
		{"count_by", "group_by", with(validArgs["count_by"], "group_by", "audit")},
		{"find_relationship", "pointer_field", with(validArgs["find_relationship"], "pointer_field", "audit")},
	} {
		_, err := render(t, c.name, c.args)
		ae := argError(t, err, c.arg)
		if want := `class Ticket has no field "audit"`; ae.Msg != want || strings.Contains(err.Error(), "Secret") {
			t.Errorf("%s: %q, want %q", c.name, ae.Msg, want)
		}
	}
}

func diagramOf(t *testing.T, text string) string {
	t.Helper()
	_, rest, ok := strings.Cut(text, "```\n")
	if !ok {
		t.Fatalf("no diagram in:\n%s", text)
	}
	d, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatalf("unterminated diagram in:\n%s", text)
	}
	return d
}

func TestParseRelationsDiagram(t *testing.T) {
	r := mustRender(t, "parse_relations", nil)
	want := "" +
		"Project.members ══▶ _User (relation)\n" +
		"Ticket.author   ──▶ _User\n" +
		"Ticket.origin   ──▶ Project\n" +
		"Ticket.project  ──▶ Project\n" +
		"Ticket.watchers ══▶ _User (relation)\n"
	if got := diagramOf(t, r.Text); got != want {
		t.Fatalf("diagram:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(r.Text, "\nClasses with no links: Tag.\n") {
		t.Errorf("unlinked classes not listed:\n%s", r.Text)
	}
	if strings.Contains(r.Text, "Secret") || strings.Contains(r.Text, "audit") || strings.Contains(r.Text, "vault") {
		t.Fatalf("edges into the hidden class leaked:\n%s", r.Text)
	}
	if r.Description != "Relationships between the Parse classes you can see." {
		t.Errorf("description %q", r.Description)
	}

	// A subset keeps the edges from or to the listed classes.
	r = mustRender(t, "parse_relations", map[string]string{"classes": " Project , Tag,,Project"})
	want = "" +
		"Project.members ══▶ _User (relation)\n" +
		"Ticket.origin   ──▶ Project\n" +
		"Ticket.project  ──▶ Project\n"
	if got := diagramOf(t, r.Text); got != want {
		t.Fatalf("subset diagram:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(r.Text, "limited to links from or to `Project` and `Tag`") || !strings.Contains(r.Text, "Classes with no links: Tag.") {
		t.Errorf("subset text:\n%s", r.Text)
	}
	if r.Description != "Relationships of Project, Tag." {
		t.Errorf("description %q", r.Description)
	}

	// No links at all.
	r = mustRender(t, "parse_relations", map[string]string{"classes": "Tag"})
	if strings.Contains(r.Text, "```") || !strings.Contains(r.Text, "No Pointer or Relation fields link these classes.") {
		t.Errorf("empty diagram:\n%s", r.Text)
	}

	// Deterministic.
	a, b := mustRender(t, "parse_relations", nil), mustRender(t, "parse_relations", nil)
	if a != b {
		t.Fatal("parse_relations is not deterministic")
	}

	_, err := render(t, "parse_relations", map[string]string{"classes": "Ticket,Nosuch"})
	if ae := argError(t, err, "classes"); ae.Msg != `unknown class "Nosuch"` {
		t.Errorf("%q", ae.Msg)
	}
}

func TestEnvErrors(t *testing.T) {
	boom := errors.New("store down")
	for _, p := range Builtin() {
		_, err := p.Render(context.Background(), errEnv{boom}, validArgs[p.Name])
		if p.Name == "parse_conventions" {
			if err != nil {
				t.Errorf("parse_conventions needs no Env: %v", err)
			}
			continue
		}
		var ae *ArgError
		if !errors.Is(err, boom) || errors.As(err, &ae) {
			t.Errorf("%s: want the Env's error, not an ArgError: %v", p.Name, err)
		}
	}
	if _, err := builtin(t, "parse_conventions").Render(context.Background(), nil, nil); err != nil {
		t.Errorf("parse_conventions with nil Env: %v", err)
	}
	if _, err := builtin(t, "explore_database").Render(context.Background(), nil, nil); err == nil {
		t.Error("explore_database with nil Env: no error")
	}
}

func TestArgErrorMessage(t *testing.T) {
	e := &ArgError{Arg: "class_name", Msg: msgRequired}
	if got := e.Error(); got != `argument "class_name": required, but missing` {
		t.Fatalf("%q", got)
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	var names []string
	for _, p := range r.List() {
		names = append(names, p.Name)
	}
	var want []string
	for _, p := range Builtin() {
		want = append(want, p.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("List() = %v", names)
	}

	var fired atomic.Int32
	unsub := r.OnChange(func() {
		fired.Add(1)
		_ = r.List() // subscribers may read the registry
	})

	custom := Prompt{
		Name:        "class_overview",
		Description: "Replaced.",
		Args:        []Arg{{Name: "team_id", Description: "A team", Required: true}},
		Render: func(_ context.Context, _ Env, args map[string]string) (Rendered, error) {
			return Rendered{Description: "custom", Text: "team " + args["team_id"]}, nil
		},
	}
	if err := r.Register(custom); err != nil {
		t.Fatal(err)
	}
	if fired.Load() != 1 {
		t.Fatalf("OnChange fired %d times", fired.Load())
	}
	p, ok := r.Get("class_overview")
	if !ok || p.Description != "Replaced." || len(p.Args) != 1 {
		t.Fatalf("Get after replace: %+v", p)
	}
	out, err := p.Render(context.Background(), nil, map[string]string{"team_id": "t1"})
	if err != nil || out.Text != "team t1" {
		t.Fatalf("custom render: %+v %v", out, err)
	}
	if n := len(r.List()); n != 8 {
		t.Fatalf("replacing a built-in changed the count to %d", n)
	}

	// Callers cannot change the registry through returned values.
	p.Args[0].Name = "mutated"
	custom.Args[0].Name = "mutated too"
	if q, _ := r.Get("class_overview"); q.Args[0].Name != "team_id" {
		t.Fatalf("registry aliased Args: %+v", q.Args)
	}

	// A new prompt is listed in name order.
	if err := r.Register(Prompt{Name: "aa_first", Description: "x", Render: custom.Render}); err != nil {
		t.Fatal(err)
	}
	if l := r.List(); l[0].Name != "aa_first" || len(l) != 9 {
		t.Fatalf("List after add: %v", l[0].Name)
	}
	if fired.Load() != 2 {
		t.Fatalf("OnChange fired %d times", fired.Load())
	}

	// Invalid prompts are refused and do not notify.
	for _, bad := range []Prompt{
		{Name: "", Render: custom.Render},
		{Name: "Upper", Render: custom.Render},
		{Name: "1st", Render: custom.Render},
		{Name: "has-dash", Render: custom.Render},
		{Name: "_x", Render: custom.Render},
		{Name: "a" + strings.Repeat("b", 64), Render: custom.Render},
		{Name: "no_render"},
		{Name: "dup_args", Render: custom.Render, Args: []Arg{{Name: "a"}, {Name: "a"}}},
		{Name: "empty_arg", Render: custom.Render, Args: []Arg{{}}},
	} {
		if err := r.Register(bad); err == nil {
			t.Errorf("Register(%q) accepted", bad.Name)
		}
	}
	if err := r.Register(Prompt{Name: "a" + strings.Repeat("b", 63), Render: custom.Render}); err != nil {
		t.Errorf("64-character name refused: %v", err)
	}
	if fired.Load() != 3 {
		t.Fatalf("OnChange fired %d times, want 3", fired.Load())
	}

	unsub()
	unsub() // idempotent
	_ = r.Register(Prompt{Name: "after_unsub", Render: custom.Render})
	if fired.Load() != 3 {
		t.Fatal("OnChange fired after unsubscribe")
	}
	if _, ok := r.Get("no_such_prompt"); ok {
		t.Fatal("Get of an unknown prompt")
	}

	// Registries are independent.
	if p, _ := NewRegistry().Get("class_overview"); p.Description == "Replaced." {
		t.Fatal("registries share state")
	}
}

func TestRegistryConcurrent(t *testing.T) {
	r := NewRegistry()
	var fired atomic.Int64
	render := func(context.Context, Env, map[string]string) (Rendered, error) { return Rendered{Text: "x"}, nil }
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(3)
		go func() {
			defer wg.Done()
			for i := range 50 {
				name := fmt.Sprintf("p%d_%d", g, i%5)
				if err := r.Register(Prompt{Name: name, Description: "d", Args: []Arg{{Name: "a"}}, Render: render}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 50 {
				l := r.List()
				if !slices.IsSortedFunc(l, func(a, b Prompt) int { return strings.Compare(a.Name, b.Name) }) {
					t.Error("List not sorted")
					return
				}
				if p, ok := r.Get("count_by"); !ok || p.Render == nil {
					t.Error("built-in missing")
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 20 {
				unsub := r.OnChange(func() { fired.Add(1) })
				unsub()
			}
		}()
	}
	wg.Wait()
	if n := len(r.List()); n != 8+8*5 {
		t.Fatalf("%d prompts after concurrent registration", n)
	}
}
