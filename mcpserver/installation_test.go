package mcpserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// installations adds Parse's _Installation (alice's and bob's devices, each
// readable by its owner only), an _Audience, and a Device class pointing
// at installations, to the fixture in st.
func installations(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	inst := parse.NewSchema(parse.ClassInstallation)
	for k, f := range map[string]parse.Field{
		"installationId": {Type: parse.TypeString}, "deviceType": {Type: parse.TypeString},
		"deviceToken": {Type: parse.TypeString}, "channels": {Type: parse.TypeArray},
	} {
		inst.Fields[k] = f
	}
	aud := parse.NewSchema("_Audience")
	aud.Fields["name"] = parse.Field{Type: parse.TypeString}
	dev := parse.NewSchema("Device")
	dev.Fields["tag"] = parse.Field{Type: parse.TypeString}
	dev.Fields["inst"] = parse.Field{Type: parse.TypePointer, TargetClass: parse.ClassInstallation}
	for _, s := range []parse.Schema{inst, aud, dev} {
		if err := st.CreateClass(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	own := func(user string) map[string]any {
		return map[string]any{user: map[string]any{"read": true, "write": true}}
	}
	for class, objs := range map[string][]parse.Object{
		parse.ClassInstallation: {
			{"objectId": "iAlice0001", "installationId": "ia", "deviceType": "ios", "deviceToken": "TOKEN-ALICE", "channels": []any{"news"}, "ACL": own(alice)},
			{"objectId": "iAlice0002", "installationId": "ia2", "deviceType": "android", "deviceToken": "TOKEN-ALICE-2", "ACL": own(alice)},
			{"objectId": "iBob000001", "installationId": "ib", "deviceType": "android", "deviceToken": "TOKEN-BOB", "ACL": own(bob)},
		},
		"_Audience": {{"objectId": "aAll000001", "name": "everyone"}},
		"Device": {
			{"objectId": "dOne000001", "tag": "one", "inst": parse.Pointer(parse.ClassInstallation, "iAlice0001")},
			{"objectId": "dTwo000001", "tag": "two", "inst": parse.Pointer(parse.ClassInstallation, "iAlice0002")},
		},
	} {
		if err := st.Create(ctx, class, objs); err != nil {
			t.Fatal(err)
		}
	}
}

// _Installation and _Audience are not hidden (the reference guide hides
// neither): the master key reads them; anyone else reads them under
// Parse Server's rules. A device's push token never reaches any agent.
func TestInstallationsReadable(t *testing.T) {
	st := fixtureStore(t)
	installations(t, st)
	m := connect(t, newServer(t, st, agent.Readonly, master), "")
	schemas := ok(t, m, "get_all_schemas", map[string]any{})
	var names []string
	for _, c := range schemas["built_in"].([]any) {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	if !slices.Contains(names, "_Installation") || !slices.Contains(names, "_Audience") || strings.Contains(mustJSON(t, schemas), "deviceToken") {
		t.Fatalf("the master key's classes: %v", schemas)
	}
	out := ok(t, m, "query_class", map[string]any{"class_name": "_Installation", "order": "objectId"})
	if got := ids(out["results"]); !slices.Equal(got, []string{"iAlice0001", "iAlice0002", "iBob000001"}) {
		t.Fatalf("the master key's installations: %v", got)
	}
	if ok(t, m, "count_objects", map[string]any{"class_name": "_Audience"})["count"] != 1.0 {
		t.Fatal("the master key does not count _Audience")
	}
	if out := ok(t, m, "get_schema", map[string]any{"class_name": "_Installation"}); strings.Contains(mustJSON(t, out), "deviceToken") {
		t.Fatalf("the schema names deviceToken: %v", out)
	}

	// deviceToken does not exist for any agent, the master key included:
	// never in a row, refused wherever it is named like an unknown field.
	for _, probe := range []map[string]any{
		{"class_name": "_Installation", "keys": []string{"deviceToken"}},
		{"class_name": "_Installation", "where": map[string]any{"deviceToken": "TOKEN-ALICE"}},
		{"class_name": "_Installation", "where": map[string]any{"deviceToken": map[string]any{"$exists": true}}},
		{"class_name": "_Installation", "order": "deviceToken"},
	} {
		fails(t, m, "query_class", probe, "access_denied")
	}
	fails(t, m, "aggregate", map[string]any{"class_name": "_Installation", "pipeline": []any{map[string]any{"$group": map[string]any{"_id": "$deviceToken"}}}}, "access_denied")
	for tool, args := range map[string]map[string]any{
		"query_class":        {"class_name": "_Installation"},
		"get_object":         {"class_name": "_Installation", "object_id": "iAlice0001"},
		"get_sample_objects": {"class_name": "_Installation"},
		"export_data":        {"class_name": "_Installation"},
		"distinct":           {"class_name": "_Installation", "field": "deviceType"},
		"aggregate":          {"class_name": "Device", "pipeline": []any{map[string]any{"$lookup": map[string]any{"from": "_Installation", "localField": "inst", "foreignField": "_id", "as": "i"}}}},
	} {
		if text := mustJSON(t, ok(t, m, tool, args)); strings.Contains(text, "TOKEN-") || strings.Contains(text, "deviceToken") {
			t.Errorf("%s gives the master key a push token: %s", tool, text)
		}
	}
	if text := mustJSON(t, ok(t, m, "query_class", map[string]any{"class_name": "Device", "include": []string{"inst"}})); strings.Contains(text, "TOKEN-") || !strings.Contains(text, `"installationId":"ia"`) {
		t.Errorf("include into _Installation: %s", text)
	}
}

// Parse Server lets only the master key find, count or delete
// installations; a get of one follows its ACL. A user cannot list them,
// count them, sample them, aggregate or export them, nor reach them by
// an include of several.
func TestInstallationsNeedTheMasterKeyToList(t *testing.T) {
	st := fixtureStore(t)
	installations(t, st)
	alic := connect(t, newServer(t, st, agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: alice}), "")
	for tool, args := range map[string]map[string]any{
		"query_class":        {"class_name": "_Installation"},
		"count_objects":      {"class_name": "_Installation"},
		"get_sample_objects": {"class_name": "_Installation"},
		"export_data":        {"class_name": "_Installation"},
		"distinct":           {"class_name": "_Installation", "field": "deviceType"},
		"group_by":           {"class_name": "_Installation", "field": "deviceType"},
		"aggregate":          {"class_name": "_Installation", "pipeline": []any{}},
		"explain_query":      {"class_name": "_Installation"},
	} {
		op := "find"
		if tool == "count_objects" {
			op = "count"
		}
		refused(t, alic, tool, args, "permission_denied", "master_only", op+" on _Installation needs the master key (Parse Server's rule for this class)")
	}
	// A sub-query or $lookup into installations is a find too.
	fails(t, alic, "query_class", map[string]any{"class_name": "Device", "where": map[string]any{"inst": map[string]any{"$inQuery": map[string]any{"className": "_Installation", "where": map[string]any{"deviceType": "ios"}}}}}, "permission_denied")
	fails(t, alic, "aggregate", map[string]any{"class_name": "Device", "pipeline": []any{map[string]any{"$lookup": map[string]any{"from": "_Installation", "localField": "inst", "foreignField": "_id", "as": "i"}}}}, "permission_denied")

	// A get of her own installation is hers; bob's reads as missing.
	out := ok(t, alic, "get_object", map[string]any{"class_name": "_Installation", "object_id": "iAlice0001"})
	if obj := out["object"].(map[string]any); obj["installationId"] != "ia" || obj["deviceToken"] != nil {
		t.Fatalf("alice's installation: %v", obj)
	}
	fails(t, alic, "get_object", map[string]any{"class_name": "_Installation", "object_id": "iBob000001"}, "not_found")

	// An include of one installation is a get; of several, a find.
	one := ok(t, alic, "query_class", map[string]any{"class_name": "Device", "where": map[string]any{"tag": "one"}, "include": []string{"inst"}})
	if inst := one["results"].([]any)[0].(map[string]any)["inst"].(map[string]any); inst["__type"] != "Object" || inst["installationId"] != "ia" {
		t.Fatalf("include of one installation: %v", inst)
	}
	both := ok(t, alic, "query_class", map[string]any{"class_name": "Device", "order": "tag", "include": []string{"inst"}})
	for _, r := range both["results"].([]any) {
		if inst := r.(map[string]any)["inst"].(map[string]any); inst["__type"] != "Pointer" {
			t.Fatalf("include of several installations: %v", inst)
		}
	}

	// Writes: an update of her own installation follows its ACL; a delete
	// needs the master key; deviceToken cannot be written.
	w := govClient(t, st, allGates, agent.Write, agent.Identity{Mode: agent.AuthUser, UserID: alice}, agent.Policy{})
	ok(t, w, "update_object", map[string]any{"class_name": "_Installation", "object_id": "iAlice0001", "object": map[string]any{"channels": []any{"sports"}}})
	fails(t, w, "update_object", map[string]any{"class_name": "_Installation", "object_id": "iAlice0001", "object": map[string]any{"deviceToken": "MINE"}}, "invalid_argument")
	refused(t, w, "delete_object", map[string]any{"class_name": "_Installation", "object_id": "iAlice0001"}, "permission_denied", "master_only",
		"delete on _Installation needs the master key (Parse Server's rule for this class)")

	// _Audience follows its class-level permissions (public here).
	if ok(t, alic, "count_objects", map[string]any{"class_name": "_Audience"})["count"] != 1.0 {
		t.Fatal("alice does not count the public _Audience")
	}
}
