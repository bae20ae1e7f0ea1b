package audit

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// The stored object and the log line of an event name the same fields
// (camelCase for snake_case) and leave out the same empty ones.
func TestObjectAndLogLineAgree(t *testing.T) {
	cost := 0.5
	for _, e := range []Event{
		{Event: "tool_call", Time: time.Unix(0, 0), Tool: "query_class", AgentID: "a"},
		{Event: "tool_call", Time: time.Unix(0, 0), Tool: "query_class", ArgKeys: []string{"where"}, AgentID: "a", Profile: "p", TenantID: "t",
			SessionID: "s", ConversationID: "c", AgentDepth: 1, ParentAgentID: "root", ClassesOnly: []string{"A"}, ToolsExcept: []string{"x"},
			Filters: map[string][]string{"A": {"f"}}, ErrorCode: "access_denied", DenialKind: "clp", EstCostUSD: &cost, Success: true},
	} {
		line, _ := json.Marshal(e)
		var logged map[string]any
		_ = json.Unmarshal(line, &logged)
		var want []string
		for k := range logged {
			switch k {
			case "event":
			case "time":
				want = append(want, "createdAt")
			default:
				want = append(want, camel(k))
			}
		}
		want = append(want, "ACL")
		var got []string
		for k := range object(e) {
			got = append(got, k)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("stored %v\n logged %v", got, want)
		}
	}
	if f := schema().Fields; f["estCostUsd"].Type != "Number" || f["filters"].Type != "Object" || f["argsKeys"].Type != "Array" || f["success"].Type != "Boolean" {
		t.Errorf("schema: %v", f)
	}
}
