package mcpserver

import (
	"testing"
)

// One decode of a body answers every question the HTTP layer asks of it.
func TestEnvelope(t *testing.T) {
	for _, c := range []struct {
		body      string
		parsed    bool
		wellForm  bool
		calls     int
		id        string
		method    string
		singleMsg bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`, true, true, 1, "7", "tools/call", true},
		{`{"jsonrpc":"2.0","id":"a","method":"ping"}`, true, true, 1, `"a"`, "ping", true},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, true, true, 0, "", "notifications/initialized", true},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, true, true, 0, "", "ping", true},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, true, true, 1, "", "ping", true},
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, true, true, 0, "3", "", true},
		{`{"jsonrpc":"1.0","id":3,"method":"ping"}`, true, false, 1, "3", "ping", true},
		{`{"jsonrpc":"2.0","id":3,"method":""}`, true, false, 0, "3", "", true},
		{`{"jsonrpc":"2.0","id":3}`, true, false, 0, "3", "", true},
		{`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"},{"jsonrpc":"2.0","id":2,"method":"c"}]`, true, true, 2, "", "", false},
		{`[]`, true, false, 0, "", "", false},
		{`[1]`, false, false, 0, "", "", false},
		{`"x"`, false, false, 0, "", "", false},
		{`{"jsonrpc":2,"method":"ping"}`, false, false, 0, "", "", false},
		// Member names match as the SDK matches them, exactly: a method
		// spelled in another case is no method, so it is neither a call
		// nor well formed here, as it is not for the SDK.
		{`{"jsonrpc":"2.0","id":3,"METHOD":"tools/call","params":{"name":"x"}}`, true, false, 0, "3", "", true},
		{`{"JSONRPC":"2.0","id":3,"method":"ping"}`, true, false, 1, "3", "ping", true},
	} {
		env, ok := parseEnvelope([]byte(c.body))
		if ok != c.parsed {
			t.Errorf("%s: parsed %v", c.body, ok)
			continue
		}
		if !ok {
			continue
		}
		m, single := env.single()
		method := ""
		if single && m.Method != nil {
			method = *m.Method
		}
		if env.wellFormed() != c.wellForm || env.calls() != c.calls || string(env.id()) != c.id || single != c.singleMsg || method != c.method {
			t.Errorf("%s: wellFormed %v calls %d id %s single %v method %q", c.body, env.wellFormed(), env.calls(), env.id(), single, method)
		}
	}
}
