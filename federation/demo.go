package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
)

// DemoTools is the tool set of the demo agent (parsemcp agent --demo): a
// thermostat with a read-only reading, an annotated write and an
// unannotated one (which counts as writing).
func DemoTools() *ToolSet {
	var mu sync.Mutex
	target := 21.0
	ts := &ToolSet{}
	_ = ts.Add(Tool{Name: "read_temperature", Title: "Read the temperature", Description: "Returns the room's current and target temperature in °C.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Annotations: &Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}},
		func(context.Context, json.RawMessage, Caller) (*Result, error) {
			mu.Lock()
			defer mu.Unlock()
			r := TextResult(fmt.Sprintf(`{"current":%.1f,"target":%.1f}`, 20.5, target))
			r.StructuredContent = map[string]any{"current": 20.5, "target": target}
			return r, nil
		})
	_ = ts.Add(Tool{Name: "set_target", Title: "Set the target temperature", Description: "Sets the target temperature (°C, 5 to 30).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"celsius":{"type":"number","minimum":5,"maximum":30}},"required":["celsius"],"additionalProperties":false}`),
		Annotations: &Annotations{ReadOnlyHint: Bool(false), DestructiveHint: Bool(false), IdempotentHint: Bool(true)}},
		func(_ context.Context, args json.RawMessage, c Caller) (*Result, error) {
			var in struct {
				Celsius *float64 `json:"celsius"`
			}
			if err := json.Unmarshal(args, &in); err != nil || in.Celsius == nil || math.IsNaN(*in.Celsius) || *in.Celsius < 5 || *in.Celsius > 30 {
				return ErrorResult("celsius must be a number from 5 to 30"), nil
			}
			mu.Lock()
			target = *in.Celsius
			mu.Unlock()
			return TextResult(fmt.Sprintf("target set to %.1f °C by %s", *in.Celsius, c.User)), nil
		})
	_ = ts.Add(Tool{Name: "reboot", Description: "Reboots the thermostat (declares no annotations, so it counts as writing)."},
		func(context.Context, json.RawMessage, Caller) (*Result, error) {
			return TextResult("rebooting"), nil
		})
	return ts
}
