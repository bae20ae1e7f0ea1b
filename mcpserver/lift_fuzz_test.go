package mcpserver

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

var liftParamSeeds = []string{
	// lifted
	`{"category":"query"}`,
	`{"category":"schema","cursor":"abc"}`,
	`{"category":"query","_meta":{"progressToken":1}}`,
	`{"category":"query","_meta":{"category":"schema"}}`,
	`{"category":"query","_meta":null}`, // once a nil-map panic
	`{"category":3,"_meta":{}}`,
	`{"category":null}`,
	`{"category":{"nested":[1,2,{"category":"x"}]},"cursor":null}`,
	`{"cursor":"c","category":"a","category":"b"}`,
	// left alone
	``,
	`null`,
	`{}`,
	`{"cursor":"category"}`,
	`{"_meta":{"category":"query"}}`,
	`{"category":"query","_meta":"oops"}`,
	`{"category":"query","_meta":[1]}`,
	`["category"]`,
	`"category"`,
	`{"category":`,
	`{"category":"q"} trailing`,
	`{"categ\u006fry":"query"}`,
	"{\"category\":\"\xff\"}",
}

// checkLifted checks one lift of params: the result is valid JSON whenever
// the input was, "category" moved into "_meta" (an existing _meta.category
// wins), and every other key, of params and of _meta, is kept as it was.
func checkLifted(t *testing.T, in, out []byte, changed bool) {
	t.Helper()
	if !changed {
		if !bytes.Equal(in, out) {
			t.Fatalf("unchanged params were rewritten:\n%s\n%s", in, out)
		}
		return
	}
	if !json.Valid(out) {
		t.Fatalf("lift of %s is not valid JSON: %s", in, out)
	}
	var before, after map[string]any
	if err := json.Unmarshal(in, &before); err != nil {
		t.Fatalf("lifted params that are not a JSON object: %s (%v)", in, err)
	}
	if err := json.Unmarshal(out, &after); err != nil {
		t.Fatalf("lift of %s is not a JSON object: %s", in, out)
	}
	if _, has := after["category"]; has {
		t.Fatalf("category not removed: %s", out)
	}
	cat, had := before["category"]
	if !had {
		t.Fatalf("lifted params without a category: %s", in)
	}
	oldMeta, _ := before["_meta"].(map[string]any)
	newMeta, ok := after["_meta"].(map[string]any)
	if !ok {
		t.Fatalf("no _meta object after lift: %s", out)
	}
	want := cat
	if c, set := oldMeta["category"]; set {
		want = c
	}
	if !reflect.DeepEqual(newMeta["category"], want) {
		t.Fatalf("_meta.category = %#v, want %#v (in %s, out %s)", newMeta["category"], want, in, out)
	}
	for k, v := range oldMeta {
		if !reflect.DeepEqual(newMeta[k], v) {
			t.Fatalf("_meta.%s changed: %#v → %#v", k, v, newMeta[k])
		}
	}
	if len(newMeta) != len(oldMeta)+boolInt(!hasKey(oldMeta, "category")) {
		t.Fatalf("_meta gained or lost keys: %v → %v", oldMeta, newMeta)
	}
	for k, v := range before {
		if k == "category" || k == "_meta" {
			continue
		}
		if !reflect.DeepEqual(after[k], v) {
			t.Fatalf("param %s changed: %#v → %#v", k, v, after[k])
		}
	}
	if len(after) != len(before)-1+boolInt(!hasKey(before, "_meta")) {
		t.Fatalf("params gained or lost keys: %v → %v", before, after)
	}
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FuzzLiftCategory fuzzes the tools/list params rewrite used by the stdio
// and in-memory transports.
func FuzzLiftCategory(f *testing.F) {
	for _, s := range liftParamSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		in := bytes.Clone(params)
		out, changed := liftCategory(params)
		if !bytes.Equal(in, params) {
			t.Fatalf("liftCategory modified its input")
		}
		checkLifted(t, in, out, changed)
	})
}

// FuzzLiftCategoryBody fuzzes the HTTP body rewrite: any body, valid JSON in
// gives valid JSON out, and a rewritten body differs from the original only
// in its params.
func FuzzLiftCategoryBody(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"category":"query"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{"category":"schema","_meta":{"progressToken":"p"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"category":"query"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_tools","arguments":{"category":"query"}},"x":"tools/list"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"tools/list","params":{"category":"q"},"method":"ping"}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"category":"query"}}]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":"category"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null,"category":"query"}`))
	f.Add([]byte(`{"method":"tools/list","params":{"category":"query"}`))
	f.Add([]byte(`not json "tools/list" "category"`))
	f.Add([]byte(``))
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["parse://Ticket/count"]}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"s-1","method":"subscriptions/listen","params":{"_meta":{"dev.parsemcp/listenId":"forged"},"notifications":{}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"subscriptions/listen","params":{"notifications":{}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":4,"method":"subscriptions\/listen","params":{"_meta":{"dev.parsemcp/listenId":"FORGED"},"notifications":{}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"parse://Ticket/count","_meta":{"dev.parsemcp/listenId":"x"}}}`))
	for _, s := range liftParamSeeds {
		f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":` + s + `}`))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in := bytes.Clone(body)
		out, _ := liftBody(body)
		if !bytes.Equal(in, body) {
			t.Fatalf("liftBody modified its input")
		}
		if bytes.Equal(in, out) {
			return
		}
		if !json.Valid(in) {
			t.Fatalf("rewrote a body that is not valid JSON: %q → %q", in, out)
		}
		if !json.Valid(out) {
			t.Fatalf("rewrite of %s is not valid JSON: %s", in, out)
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal(in, &before) != nil || json.Unmarshal(out, &after) != nil {
			t.Fatalf("rewrote a body that is not a JSON object: %s → %s", in, out)
		}
		var method string
		if json.Unmarshal(before["method"], &method) != nil || (method != "tools/list" && method != "subscriptions/listen" && method != "resources/subscribe" && method != "resources/unsubscribe") {
			t.Fatalf("rewrote a %q request: %s", method, in)
		}
		for k, v := range before {
			if k == "params" {
				continue
			}
			var a, b any
			_ = json.Unmarshal(v, &a)
			_ = json.Unmarshal(after[k], &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("member %s changed: %s → %s", k, v, after[k])
			}
		}
		if len(after) != len(before) {
			t.Fatalf("members gained or lost: %s → %s", in, out)
		}
		if method == "resources/subscribe" || method == "resources/unsubscribe" {
			if bytes.Contains(out, []byte("dev.parsemcp/listenId")) {
				t.Fatalf("%s rewrite keeps a client-sent listen id: %s", method, out)
			}
			return
		}
		if method == "subscriptions/listen" {
			var p struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}
			if err := json.Unmarshal(after["params"], &p); err != nil || string(p.Meta["dev.parsemcp/listenId"]) != string(before["id"]) {
				t.Fatalf("listen rewrite of %s does not carry its id: %s", in, out)
			}
			return
		}
		checkLifted(t, before["params"], after["params"], true)
	})
}
