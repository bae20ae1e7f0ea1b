package tools

import "github.com/google/jsonschema-go/jsonschema"

// ObjectOutput is the output schema of every built-in tool: a JSON object.
// A result's fields differ between a tool's modes (a dry run, a page cut
// to the response budget, an explained plan with or without its text), so
// each tool's fields are described in its docs rather than in tools/list,
// where the agent would pay for them on every session (the catalog stays
// within its 10 KB; see docs/PERFORMANCE.md).
var ObjectOutput = &jsonschema.Schema{Type: "object"}
