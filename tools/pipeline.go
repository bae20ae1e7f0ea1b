package tools

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Stages is a pipeline argument: a JSON array of stage objects, or a string
// holding one. The raw text is kept so stage keys keep their order ($sort).
type Stages json.RawMessage

// UnmarshalJSON keeps the raw pipeline.
func (p *Stages) UnmarshalJSON(b []byte) error {
	*p = append((*p)[:0], b...)
	return nil
}

func (p Stages) raw() ([]byte, error) {
	b := bytes.TrimSpace(p)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, err
		}
		b = []byte(strings.TrimSpace(s))
	}
	if len(b) == 0 || b[0] != '[' {
		return nil, &Error{Code: CodeInvalidArgument, Message: `argument "pipeline" must be an array of stage objects, e.g. [{"$match":{…}},{"$group":{…}}]`, Details: map[string]any{"argument": "pipeline"}}
	}
	return b, nil
}

// withStage appends a stage (JSON text) to a raw pipeline, keeping its
// text and so its $sort key order.
func withStage(raw []byte, stage string) []byte {
	body := bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(raw), []byte("]")))
	if len(bytes.TrimSpace(bytes.TrimPrefix(body, []byte("[")))) == 0 {
		return []byte("[" + stage + "]")
	}
	return []byte(string(body) + "," + stage + "]")
}
