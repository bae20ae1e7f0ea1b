package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRenderTemplate(t *testing.T) {
	arg := func(name string) map[string]any { return map[string]any{"$arg": name} }
	ptr := func(id any) map[string]any {
		return map[string]any{"__type": "Pointer", "className": "_User", "objectId": id}
	}
	for _, c := range []struct {
		name    string
		set     map[string]any
		args    map[string]any
		want    map[string]any
		wantErr string
	}{
		{"literals only", map[string]any{"status": "closed", "n": 1.0, "ok": true, "none": nil},
			map[string]any{"ignored": "x"}, map[string]any{"status": "closed", "n": 1.0, "ok": true, "none": nil}, ""},
		{"top-level argument", map[string]any{"body": arg("body")},
			map[string]any{"body": "hello"}, map[string]any{"body": "hello"}, ""},
		{"argument of any JSON type", map[string]any{"tags": arg("tags"), "meta": arg("meta")},
			map[string]any{"tags": []any{"a", "b"}, "meta": map[string]any{"k": 1.0}},
			map[string]any{"tags": []any{"a", "b"}, "meta": map[string]any{"k": 1.0}}, ""},
		{"missing top-level argument is left out", map[string]any{"body": arg("body"), "internal": arg("internal"), "edited": false},
			map[string]any{"body": "hi"}, map[string]any{"body": "hi", "edited": false}, ""},
		{"explicit null argument is kept", map[string]any{"note": arg("note")},
			map[string]any{"note": nil}, map[string]any{"note": nil}, ""},
		{"nested in an object", map[string]any{"assignee": ptr(arg("assignee"))},
			map[string]any{"assignee": "UAAAAAAAAD"}, map[string]any{"assignee": ptr("UAAAAAAAAD")}, ""},
		{"nested in an array", map[string]any{"pair": []any{arg("a"), "b", []any{arg("a")}}},
			map[string]any{"a": 1.0}, map[string]any{"pair": []any{1.0, "b", []any{1.0}}}, ""},
		{"same argument twice", map[string]any{"x": arg("v"), "y": map[string]any{"z": arg("v")}},
			map[string]any{"v": "s"}, map[string]any{"x": "s", "y": map[string]any{"z": "s"}}, ""},
		{"missing nested argument", map[string]any{"assignee": ptr(arg("assignee"))},
			map[string]any{}, nil, `assignee.objectId: argument "assignee" is required here`},
		{"missing argument in array", map[string]any{"pair": []any{"a", arg("b")}},
			nil, nil, `pair[1]: argument "b" is required here`},
		{"malformed reference: extra key", map[string]any{"x": map[string]any{"$arg": "a", "b": 1.0}},
			map[string]any{"a": 1.0}, nil, `x: an argument reference is exactly {"$arg": "<parameter name>"}`},
		{"malformed reference: not a string", map[string]any{"x": map[string]any{"y": map[string]any{"$arg": 3.0}}},
			nil, nil, `x.y: an argument reference is exactly {"$arg": "<parameter name>"}`},
		{"empty template", map[string]any{}, map[string]any{"a": 1.0}, map[string]any{}, ""},
		{"nil template", nil, nil, map[string]any{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := RenderTemplate(c.set, c.args)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("RenderTemplate = %v, %v; want error %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderTemplateCopies(t *testing.T) {
	set := map[string]any{"p": map[string]any{"k": "v", "id": map[string]any{"$arg": "id"}}, "l": []any{"a"}, "m": map[string]any{"$arg": "m"}}
	args := map[string]any{"id": "X", "m": map[string]any{"inner": "y"}}
	got, err := RenderTemplate(set, args)
	if err != nil {
		t.Fatal(err)
	}
	got["p"].(map[string]any)["k"] = "changed"
	got["l"].([]any)[0] = "changed"
	got["m"].(map[string]any)["inner"] = "changed"
	if set["p"].(map[string]any)["k"] != "v" || set["l"].([]any)[0] != "a" || args["m"].(map[string]any)["inner"] != "y" {
		t.Error("the result shares maps or slices with the template or the arguments")
	}
	if _, ok := set["p"].(map[string]any)["id"].(map[string]any); !ok {
		t.Error("the template was modified")
	}
}
