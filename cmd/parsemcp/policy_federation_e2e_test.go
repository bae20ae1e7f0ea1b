package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A policy's tool filter names every agent of a type with a trailing
// star (`device-*`, as docs/FEDERATION.md says): the loader takes it, and
// a real server applies it to the remote tools of real agents, listing
// and calling, in `except` and in `only`.
func TestPolicyRemoteAgentTypeWildcard(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte(`settings: {strict_tool_filter: true}
agents:
  no-devices:
    permission: write
    identity: master
    keys: [{key: key-no-devices}]
    tools: {except: [device-*]}
  devices-only:
    permission: write
    identity: master
    keys: [{key: key-devices}]
    tools: {only: [count_objects, device-*]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := llmEnv(t)
	srv := startServe(t, env, "--demo", "--demo-rows", "600", "--policy", pol, "--federation", "embedded", "--federation-broker-addr", "127.0.0.1:0")
	startAgentProcess(t, env, "--broker", srv.broker, "--entity", "device/thermo", "--demo")
	startAgentProcess(t, env, "--broker", srv.broker, "--entity", "sensor/probe", "--demo")

	noDevices, err := httpClient(t, srv.url, "key-no-devices")
	if err != nil {
		t.Fatal(err)
	}
	devices, err := httpClient(t, srv.url, "key-devices")
	if err != nil {
		t.Fatal(err)
	}
	// Both agents have joined once each key lists the one it may reach.
	listTools(t, noDevices, "sensor-probe__read_temperature")
	listTools(t, devices, "device-thermo__read_temperature")

	for _, c := range []struct {
		key              string
		allowed, refused []string
	}{
		{"no-devices", []string{"sensor-probe__read_temperature", "count_objects"}, []string{"device-thermo__read_temperature", "device-thermo__set_target"}},
		{"devices-only", []string{"device-thermo__read_temperature", "count_objects"}, []string{"sensor-probe__read_temperature", "query_class"}},
	} {
		cs := noDevices
		if c.key == "devices-only" {
			cs = devices
		}
		names := toolNames(listTools(t, cs, c.allowed...))
		for _, r := range c.refused {
			if names[r] {
				t.Errorf("%s lists %s", c.key, r)
			}
			if got, isErr := toolText(t, cs, r, map[string]any{}); !isErr || !strings.Contains(got, "tool_filtered") {
				t.Errorf("%s calling %s: %q", c.key, r, got)
			}
		}
		for _, a := range c.allowed {
			args := map[string]any{}
			if a == "count_objects" {
				args["class_name"] = "Ticket"
			}
			if got, isErr := toolText(t, cs, a, args); isErr {
				t.Errorf("%s calling %s: %q", c.key, a, got)
			}
		}
	}
}
