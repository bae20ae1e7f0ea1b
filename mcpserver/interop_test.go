package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/npmcache"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/tools"
)

// tsClient returns the node binary and a directory holding interop/ts's
// scripts and the official TypeScript SDK, installed outside the tree
// (internal/testing/npmcache). It skips when node or the registry is missing,
// except in CI.
func tsClient(t *testing.T) (string, string) {
	t.Helper()
	return npmcache.Node(t), npmcache.Dir(t, "../interop/ts")
}

// The official TypeScript SDK client sees heartbeats and then the tool's
// own progress on a long call, and is asked, through elicitation, to
// approve a deletion: its yes deletes, its no refuses with nothing
// written.
func TestTypeScriptProgressAndApproval(t *testing.T) {
	node, dir := tsClient(t)
	st := fixtureStore(t)
	cfg := tools.DefaultConfig
	cfg.Gates = allGates
	reg := slowTools(t, 1200*time.Millisecond)
	mk := func() *agent.Agent { return agent.New(agent.Admin, master) }
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Tools: reg, ToolConfig: &cfg, HeartbeatInterval: 100 * time.Millisecond,
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) { return mk(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	url := mount(t, mcpserver.HandlerOptions{Server: srv, Agent: func(*http.Request) (*agent.Agent, error) { return mk(), nil }})
	yes, no := newTicket(t, st), newTicket(t, st)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "progress_elicit.mjs", url, yes, no)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, stderr.String())
	}
	type note struct {
		Progress, Total float64
		Message         string
	}
	var report struct {
		ProtocolVersion string
		Progress        map[string][]note
		Asked           []struct {
			Message string
			Schema  map[string]any
		}
		Approved, Declined struct {
			IsError bool
			Result  map[string]any
		}
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	t.Logf("TypeScript client at protocol %s", report.ProtocolVersion)

	if beats := report.Progress["slow"]; len(beats) < 5 {
		t.Fatalf("heartbeats seen by the TS client: %+v", beats)
	}
	own, last := 0, 0.0
	for _, n := range report.Progress["reporting"] {
		if n.Progress <= last {
			t.Fatalf("progress not increasing: %+v", report.Progress["reporting"])
		}
		last = n.Progress
		if n.Total == 3 {
			own++
		} else if own > 0 {
			t.Fatalf("heartbeat after the tool's own progress: %+v", report.Progress["reporting"])
		}
	}
	if own != 3 {
		t.Fatalf("tool's own progress seen by the TS client: %+v", report.Progress["reporting"])
	}

	if len(report.Asked) != 2 || !strings.Contains(report.Asked[0].Message, "Permanently delete the Ticket object "+yes) ||
		report.Asked[0].Schema["required"].([]any)[0] != "approve" {
		t.Fatalf("elicitation requests: %+v", report.Asked)
	}
	if report.Approved.IsError || exists(t, st, "Ticket", yes) {
		t.Fatalf("approved deletion: %+v (still there: %v)", report.Approved, exists(t, st, "Ticket", yes))
	}
	if !report.Declined.IsError || report.Declined.Result["error_code"] != "approval_denied" || !exists(t, st, "Ticket", no) {
		t.Fatalf("declined deletion: %+v", report.Declined)
	}
}
