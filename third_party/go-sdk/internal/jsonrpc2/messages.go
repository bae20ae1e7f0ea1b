// Copyright 2018 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

package jsonrpc2

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
)

// ID is a Request identifier, which is defined by the spec to be a string, integer, or null.
// https://www.jsonrpc.org/specification#request_object
type ID struct {
	value any
}

// MakeID coerces the given Go value to an ID. The value should be the
// default JSON marshaling of a Request identifier: nil, float64, or string.
//
// Returns an error if the value type was not a valid Request ID type.
//
// TODO: ID can't be a json.Marshaler/Unmarshaler, because we want to omitzero.
// Simplify this package by making ID json serializable once we can rely on
// omitzero.
func MakeID(v any) (ID, error) {
	switch v := v.(type) {
	case nil:
		return ID{}, nil
	case float64:
		return Int64ID(int64(v)), nil
	case string:
		return StringID(v), nil
	}
	return ID{}, fmt.Errorf("%w: invalid ID type %T", ErrParse, v)
}

// Message is the interface to all jsonrpc2 message types.
// They share no common functionality, but are a closed set of concrete types
// that are allowed to implement this interface. The message types are *Request
// and *Response.
type Message interface {
	// marshal builds the wire form from the API form.
	// It is private, which makes the set of Message implementations closed.
	marshal(to *wireCombined)
}

// Request is a Message sent to a peer to request behavior.
// If it has an ID it is a call, otherwise it is a notification.
type Request struct {
	// ID of this request, used to tie the Response back to the request.
	// This will be nil for notifications.
	ID ID
	// Method is a string containing the method name to invoke.
	Method string
	// Params is either a struct or an array with the parameters of the method.
	Params json.RawMessage
	// Extra is additional information that does not appear on the wire. It can be
	// used to pass information from the application to the underlying transport.
	Extra any
}

// Response is a Message used as a reply to a call Request.
// It will have the same ID as the call it is a response to.
type Response struct {
	// result is the content of the response.
	Result json.RawMessage
	// err is set only if the call failed.
	Error error
	// id of the request this is a response to.
	ID ID
	// Extra is additional information that does not appear on the wire. It can be
	// used to pass information from the underlying transport to the application.
	Extra any

	// wire is the whole message, encoded when the response was made from a
	// jsonAppender, with Result the part of it after the head that
	// appendResponseHead writes (parsemcp's patch: EncodeMessage sends it as it
	// is instead of copying Result into a new envelope).
	wire []byte
}

// StringID creates a new string request identifier.
func StringID(s string) ID { return ID{value: s} }

// Int64ID creates a new integer request identifier.
func Int64ID(i int64) ID { return ID{value: i} }

// IsValid returns true if the ID is a valid identifier.
// The default value for ID will return false.
func (id ID) IsValid() bool { return id.value != nil }

// Raw returns the underlying value of the ID.
func (id ID) Raw() any { return id.value }

// NewNotification constructs a new Notification message for the supplied
// method and parameters.
func NewNotification(method string, params any) (*Request, error) {
	p, merr := marshalToRaw(params)
	return &Request{Method: method, Params: p}, merr
}

// NewCall constructs a new Call message for the supplied ID, method and
// parameters.
func NewCall(id ID, method string, params any) (*Request, error) {
	p, merr := marshalToRaw(params)
	return &Request{ID: id, Method: method, Params: p}, merr
}

func (msg *Request) IsCall() bool { return msg.ID.IsValid() }

func (msg *Request) marshal(to *wireCombined) {
	to.ID = msg.ID.value
	to.Method = msg.Method
	to.Params = msg.Params
}

// NewResponse constructs a new Response message that is a reply to the
// supplied. If err is set result may be ignored.
func NewResponse(id ID, result any, rerr error) (*Response, error) {
	if rerr == nil {
		if resp, ok, err := appendedResponse(id, result); ok {
			return resp, err
		}
	}
	r, merr := marshalToRaw(result)
	return &Response{ID: id, Result: r, Error: rerr}, merr
}

// jsonAppender is a json.Marshaler that can also append its JSON text to
// a buffer, the JSON counterpart of encoding.TextAppender: AppendJSON(b)
// is b followed by what MarshalJSON returns. A type with only the
// AppendJSON method is encoded as before (encoding/json ignores it).
type jsonAppender interface {
	json.Marshaler
	AppendJSON(b []byte) ([]byte, error)
}

// validJSONAppender is a jsonAppender that promises, by having the
// AppendsValidJSON method, that AppendJSON appends valid JSON text with no
// space around it whenever it returns no error: its output is sent as it
// is, not checked again. A type that embeds one inherits the promise
// with the method: a type that embeds one and appends other JSON must not
// embed it that way.
type validJSONAppender interface {
	jsonAppender
	AppendsValidJSON()
}

// appendedResponse is the successful response of a result that is a
// jsonAppender (and not a nil pointer), encoded whole in one buffer: the
// head, the result appended after it, the closing brace. For a large
// result this spares the copy EncodeMessage would make of it (and the
// second buffer held while it is sent). Result is the result's part of
// that buffer, checked valid as marshalerRaw checks a Marshaler's output
// unless the result is a validJSONAppender (for an id without a head, the
// result alone). ok is false for any other result.
func appendedResponse(id ID, result any) (resp *Response, ok bool, err error) {
	a, isA := result.(jsonAppender)
	if !isA || isNilPointer(result) {
		return nil, false, nil
	}
	// Room for the head of an integer id (32 bytes and the digits), so
	// that it is written in one allocation; without a head (no id), no
	// wire.
	head, headed := appendResponseHead(make([]byte, 0, 64), id)
	wire, err := a.AppendJSON(head)
	var res []byte
	switch {
	case err != nil:
	case len(wire) < len(head) || !bytes.Equal(wire[:len(head)], head):
		err = errors.New("AppendJSON did not append to its argument")
	default:
		res = wire[len(head):]
	}
	var trimmed json.RawMessage
	if _, valid := result.(validJSONAppender); valid && err == nil {
		trimmed = res
	} else if trimmed, err = checkedOutput(result, res, err); err != nil {
		return &Response{ID: id}, true, err
	}
	if !headed || len(trimmed) != len(res) {
		// Not the bytes the general path would write: let it copy them.
		return &Response{ID: id, Result: trimmed}, true, nil
	}
	wire = append(wire, '}')
	return &Response{ID: id, Result: res[:len(res):len(res)], wire: wire}, true, nil
}

// appendResponseHead appends to dst a successful response's text up to
// its result, `{"jsonrpc":"2.0","id":…,"result":`, as the general path
// writes it. ok is false for an id that is neither an integer nor a
// string.
func appendResponseHead(dst []byte, id ID) (head []byte, ok bool) {
	const start = `{"jsonrpc":"` + wireVersion + `","id":`
	switch v := id.value.(type) {
	case int64:
		head = strconv.AppendInt(append(dst, start...), v, 10)
	case string:
		quoted, err := jsonMarshal(v)
		if err != nil {
			return dst, false
		}
		head = append(append(dst, start...), quoted...)
	default:
		return dst, false
	}
	return append(head, `,"result":`...), true
}

// encoded is the response's wire text made by appendedResponse, if it
// still is its encoding (Result is not empty): Result is still the part of it after head (same
// length, same memory: changed in place, it changed there too) and head is
// still its head (the id unchanged).
func (msg *Response) encoded(head []byte) ([]byte, bool) {
	n := len(head)
	if msg.wire == nil || len(msg.wire) != n+len(msg.Result)+1 ||
		&msg.wire[n] != &msg.Result[0] || !bytes.Equal(msg.wire[:n], head) {
		return nil, false
	}
	// Without its spare capacity: a caller appending to what
	// EncodeMessage returns (a newline) copies it, as it did when each
	// call returned a new buffer, and cannot write into a later call's.
	return msg.wire[:len(msg.wire):len(msg.wire)], true
}

func (msg *Response) marshal(to *wireCombined) {
	to.ID = msg.ID.value
	to.Error = toWireError(msg.Error)
	to.Result = msg.Result
}

func toWireError(err error) *WireError {
	if err == nil {
		// no error, the response is complete
		return nil
	}
	if err, ok := err.(*WireError); ok {
		// already a wire error, just use it
		return err
	}
	result := &WireError{Message: err.Error()}
	var wrapped *WireError
	if errors.As(err, &wrapped) {
		// if we wrapped a wire error, keep the code from the wrapped error
		// but the message from the outer error
		result.Code = wrapped.Code
	}
	return result
}

func EncodeMessage(msg Message) ([]byte, error) {
	if data, ok := encodeResult(msg); ok {
		return data, nil
	}
	wire := wireCombined{VersionTag: wireVersion}
	msg.marshal(&wire)
	data, err := jsonMarshal(&wire)
	if err != nil {
		return nil, fmt.Errorf("marshaling jsonrpc message: %w", err)
	}
	return data, nil
}

// encodeResult writes a successful response whose result is already JSON
// text without encoding that text again: encoding the wireCombined form
// would validate and compact the raw result a second time (NewResponse
// did it once), which for a large result costs as much as producing it.
// The bytes are those the general path writes for a compact result (the
// fields in wireCombined's order). ok is false for any other message.
func encodeResult(msg Message) (data []byte, ok bool) {
	r, isResp := msg.(*Response)
	if !isResp || r.Error != nil || len(r.Result) == 0 {
		return nil, false
	}
	var buf [64]byte
	head, ok := appendResponseHead(buf[:0], r.ID)
	if !ok {
		return nil, false
	}
	if data, ok := r.encoded(head); ok {
		return data, true
	}
	data = make([]byte, 0, len(head)+len(r.Result)+1)
	data = append(data, head...)
	data = append(data, r.Result...)
	return append(data, '}'), true
}

// EncodeIndent is like EncodeMessage, but honors indents.
// TODO(rfindley): refactor so that this concern is handled independently.
// Perhaps we should pass in a json.Encoder?
func EncodeIndent(msg Message, prefix, indent string) ([]byte, error) {
	wire := wireCombined{VersionTag: wireVersion}
	msg.marshal(&wire)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, indent)
	if err := enc.Encode(&wire); err != nil {
		return nil, fmt.Errorf("marshaling jsonrpc message: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// wireDecode is the decode form of [wireCombined]. Method is a [json.RawMessage]
// so we can tell whether the "method" key was present on the wire, including
// when its value is the empty string (see go-sdk#976).
type wireDecode struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *WireError      `json:"error,omitempty"`
}

func DecodeMessage(data []byte) (Message, error) {
	msg := wireDecode{}
	if err := internaljson.Unmarshal(data, &msg); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if msg.VersionTag != wireVersion {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", msg.VersionTag, wireVersion)
	}
	id, err := MakeID(msg.ID)
	if err != nil {
		return nil, err
	}
	if len(msg.Method) > 0 {
		// The "method" key was present. Decode its value (including "").
		var method string
		if err := internaljson.Unmarshal(msg.Method, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &Request{
			Method: method,
			ID:     id,
			Params: msg.Params,
		}, nil
	}
	// no method key, should be a response
	if !id.IsValid() {
		return nil, ErrInvalidRequest
	}
	resp := &Response{
		ID:     id,
		Result: msg.Result,
	}
	// we have to check if msg.Error is nil to avoid a typed error
	if msg.Error != nil {
		resp.Error = msg.Error
	}
	return resp, nil
}

func marshalToRaw(obj any) (json.RawMessage, error) {
	if obj == nil {
		return nil, nil
	}
	if data, ok, err := marshalerRaw(obj); ok {
		return data, err
	}
	data, err := jsonMarshal(obj)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(data), nil
}

// marshalerRaw is the JSON of a json.Marshaler that is not a nil
// pointer: its own output, checked valid, without the copy encoding/json
// makes to compact it (for a large result that copy and its buffer cost
// as much as producing the text). encoding/json with HTML escaping off
// only drops insignificant whitespace from a Marshaler's valid output, so
// for the compact output of every Marshaler of this module (and
// encoding/json's own) the bytes are the same. ok is false when obj is no
// such Marshaler.
func marshalerRaw(obj any) (data json.RawMessage, ok bool, err error) {
	m, isM := obj.(json.Marshaler)
	if !isM || isNilPointer(obj) {
		return nil, false, nil
	}
	out, err := m.MarshalJSON()
	data, err = checkedOutput(obj, out, err)
	return data, true, err
}

// checkedOutput is the output of obj's MarshalJSON (or AppendJSON) as
// encoding/json takes it: checked valid and trimmed of surrounding space,
// or the *json.MarshalerError encoding/json returns for an error or
// invalid JSON.
func checkedOutput(obj any, data []byte, err error) (json.RawMessage, error) {
	if err == nil && !internaljson.Valid(data) {
		err = errors.New("invalid JSON")
	}
	if err != nil {
		return nil, &json.MarshalerError{Type: reflect.TypeOf(obj), Err: err}
	}
	return bytes.TrimSpace(data), nil
}

// isNilPointer reports whether obj is a nil pointer, which encoding/json
// encodes as null without calling its methods.
func isNilPointer(obj any) bool {
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// jsonMarshal marshals obj to JSON like json.Marshal but without HTML escaping.
func jsonMarshal(obj any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, err
	}
	// json.Encoder.Encode adds a trailing newline. Trim it to be consistent with json.Marshal.
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
