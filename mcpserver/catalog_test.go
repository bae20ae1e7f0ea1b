package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
)

// MaxCatalogBytes bounds the tools/list an analyst (the read-only tier)
// gets: the agent pays for every byte of it on every session.
const maxCatalogBytes = 10 << 10

// The catalog stays compact: the where-language and the pipeline stages
// are documented once, in a resource each tool points to.
func TestCatalogSize(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, agent.Identity{Mode: agent.AuthRole, Roles: []string{"Admin"}}), "")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	t.Logf("tools/list: %d tools, %d bytes", len(res.Tools), len(b))
	if len(b) > maxCatalogBytes {
		for _, tl := range res.Tools {
			tb, _ := json.Marshal(tl)
			t.Logf("  %s: %d bytes", tl.Name, len(tb))
		}
		t.Fatalf("tools/list is %d bytes, over %d", len(b), maxCatalogBytes)
	}
	if n := strings.Count(string(b), "$nearSphere"); n > 0 {
		t.Fatalf("the where-language is spelled out %d times in the catalog", n)
	}
}
