package mcpserver

import (
	"bytes"
	"encoding/json"

	segjson "github.com/segmentio/encoding/json"
)

// envelope is a POST body's JSON-RPC message or batch, decoded once: the
// HTTP layer's checks (the envelope's shape, the calls it holds, the id to
// answer a refusal with, the method to lift) read it instead of decoding
// the body again each.
type envelope struct {
	batch bool
	msgs  []envMessage
}

// envMessage is one JSON-RPC message: its members, params and result
// left as they are.
type envMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// parseEnvelope decodes body (valid JSON: checkBody checked) as a message
// or a batch; ok is false when it is neither (a scalar, an array of
// scalars, a member of the wrong type).
func parseEnvelope(body []byte) (env envelope, ok bool) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		env.batch = true
		return env, decodeAsSDK(body, &env.msgs) == nil
	}
	env.msgs = make([]envMessage, 1)
	return env, decodeAsSDK(body, &env.msgs[0]) == nil
}

// decodeAsSDK decodes as the SDK's JSON-RPC layer does (the same decoder,
// member names matched exactly), so the checks here read a message as the
// SDK will.
func decodeAsSDK(body []byte, v any) error {
	_, err := segjson.Parse(body, v, segjson.DontMatchCaseInsensitiveStructFields)
	return err
}

// wellFormed reports whether every message is JSON-RPC 2.0 and a request,
// a notification or a response, and a batch is not empty.
func (e envelope) wellFormed() bool {
	if len(e.msgs) == 0 {
		return false
	}
	for _, m := range e.msgs {
		if m.JSONRPC != "2.0" || !(m.Method != nil && *m.Method != "" || m.Result != nil || m.Error != nil) {
			return false
		}
	}
	return true
}

// calls counts the requests that expect an answer (a method and an id
// that is not null).
func (e envelope) calls() int {
	n := 0
	for _, m := range e.msgs {
		if m.Method != nil && *m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" {
			n++
		}
	}
	return n
}

// id is the id of a single message, to answer a refusal with (nil for a
// batch, or an id that is not a string or a number).
func (e envelope) id() json.RawMessage {
	if e.batch || len(e.msgs) != 1 || len(e.msgs[0].ID) == 0 {
		return nil
	}
	switch id := e.msgs[0].ID; id[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return id
	}
	return nil
}

// single is the one message of a body that is not a batch.
func (e envelope) single() (envMessage, bool) {
	if e.batch || len(e.msgs) != 1 {
		return envMessage{}, false
	}
	return e.msgs[0], true
}
