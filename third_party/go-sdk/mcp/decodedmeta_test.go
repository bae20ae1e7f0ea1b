// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// validateRequestMetaUnpatched is validateRequestMeta as v1.8.0 has it.
func validateRequestMetaUnpatched(req *jsonrpc.Request) (*validatedMeta, error) {
	// SEP-2575 defines the `_meta` triple for calls only: NotificationParams
	// declares `_meta` optional with no protocolVersion, so a notification
	// neither selects the new protocol nor is discarded for carrying an
	// incomplete triple.
	if !req.IsCall() {
		return &validatedMeta{usesNewProtocol: false, initializeParams: nil}, nil
	}
	meta := extractRequestMeta(req.Params)
	if meta == nil {
		return &validatedMeta{usesNewProtocol: false, initializeParams: nil}, nil
	}
	protocolVersion, ok := meta[MetaKeyProtocolVersion].(string)
	if !ok || protocolVersion < protocolVersion20260728 {
		return &validatedMeta{usesNewProtocol: false, initializeParams: nil}, nil
	}
	var clientInfo *Implementation
	if _, present := meta[MetaKeyClientInfo]; present {
		var ok bool
		clientInfo, ok = decodeMetaValue[*Implementation](meta, MetaKeyClientInfo)
		if !ok {
			return nil, &jsonrpc.Error{
				Code:    jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("invalid _meta field %q", MetaKeyClientInfo),
			}
		}
	}
	capabilities, ok := decodeMetaValue[*clientCapabilitiesV2](meta, MetaKeyClientCapabilities)
	if !ok {
		return nil, &jsonrpc.Error{
			Code:    jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("missing or invalid _meta field %q", MetaKeyClientCapabilities),
		}
	}
	logLevel, _ := decodeMetaValue[LoggingLevel](meta, MetaKeyLogLevel)
	return &validatedMeta{usesNewProtocol: true, initializeParams: &InitializeParams{
		ProtocolVersion: protocolVersion,
		Capabilities:    capabilities.toV1(),
		ClientInfo:      clientInfo,
	}, logLevel: logLevel}, nil
}

// The server checks the _meta of the params it decoded (PATCHES.md 13)
// with the answer v1.8.0's check gave by decoding the _meta on its own:
// for several methods, a corpus of valid, mistyped, duplicated, escaped and
// invalid params, and random mutations of them.
func TestDecodedMetaAsUnpatched(t *testing.T) {
	infos := NewServer(&Implementation{Name: "t"}, nil).receivingMethodInfos()
	const (
		pv   = `"io.modelcontextprotocol/protocolVersion"`
		caps = `"io.modelcontextprotocol/clientCapabilities"`
		info = `"io.modelcontextprotocol/clientInfo"`
		lvl  = `"io.modelcontextprotocol/logLevel"`
	)
	corpus := []string{
		``, `{}`, `null`, `[]`, `5`, `not json`, `{"_meta":`, `{"_meta":null}`, `{"_meta":"s"}`, `{"_meta":[1]}`, `{"_meta":{}}`,
		`{"name":"get_object","arguments":{"class_name":"Ticket"}}`,
		`{"name":"x","arguments":{"a":1},"_meta":{` + pv + `:"2026-07-28",` + caps + `:{},` + info + `:{"name":"c","version":"1"}}}`,
		`{"name":"x","_meta":{` + pv + `:"2026-07-28",` + caps + `:{"roots":{"listChanged":true},"sampling":{},"experimental":{"k":[1,"v"]}},` + lvl + `:"debug"}}`,
		`{"name":"x","_meta":{` + pv + `:"2026-07-28"}}`, `{"name":"x","_meta":{` + pv + `:"2025-06-18",` + caps + `:{}}}`,
		`{"name":"x","_meta":{` + pv + `:"2026-07-28",` + caps + `:null}}`, `{"name":"x","_meta":{` + pv + `:"2026-07-28",` + caps + `:"s"}}`,
		`{"name":"x","_meta":{` + pv + `:"2026-07-28",` + caps + `:{},` + info + `:null}}`, `{"name":"x","_meta":{` + pv + `:"2026-07-28",` + caps + `:{},` + info + `:{"name":5}}}`,
		`{"name":"x","_meta":{` + pv + `:"2026-07-28",` + caps + `:{},` + info + `:{"name":1,"name":"c"}}}`,
		`{"name":"x","_meta":{` + pv + `:"2026-07-28",` + caps + `:{},` + lvl + `:7}}`, `{"name":"x","_meta":{` + pv + `:7,` + caps + `:{}}}`,
		`{"name":"x","_meta":{` + pv + `:"2026-07-28",` + caps + `:{"roots":[]}}}`, `{"name":"x","_meta":{"io.modelcontextprotocol/protocol\u0056ersion":"2026-07-28",` + caps + `:{}}}`,
		`{"name":"x","\u005fmeta":{` + pv + `:"2026-07-28",` + caps + `:{}}}`, `{"name":"x","_META":{` + pv + `:"2026-07-28",` + caps + `:{}}}`,
		`{"name":"x","_meta":{` + pv + `:"2026-07-28",` + caps + `:{}},"_meta":{` + pv + `:"2025-06-18"}}`,
		`{"name":"x","_meta":{` + pv + `:"2026-07-28",` + caps + `:{}},"arguments":"not an object"}`, `{"name":5,"_meta":{` + pv + `:"2026-07-28",` + caps + `:{}}}`,
		`{"name":"x","_meta":{` + pv + `:"2026-07-28",` + caps + `:{}},"arguments":{"big":1e400}}`, `{"name":"x","_meta":{` + pv + `:"2026-07-28",` + caps + `:{},"n":1e400}}`,
		`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"},"_meta":{` + pv + `:"2026-07-28",` + caps + `:{}}}`,
		`{"uri":"parse://Ticket/count","_meta":{` + pv + `:"2026-07-28",` + caps + `:{}}}`, `{"cursor":"c","_meta":{"progressToken":3}}`,
		`{"name":"x","_meta":{` + pv + `:"2026-07-28",` + caps + `:{}}} trailing`,
	}
	methods := []string{methodCallTool, methodInitialize, methodReadResource, methodListTools, methodPing, methodGetPrompt, "no/such/method"}
	id, err := jsonrpc.MakeID(float64(1))
	if err != nil {
		t.Fatal(err)
	}
	answer := func(vm *validatedMeta, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("%v %q", vm.usesNewProtocol, vm.logLevel) // and initializeParams, compared deeply
	}
	deep := func(vm *validatedMeta) *InitializeParams {
		if vm == nil {
			return nil
		}
		return vm.initializeParams
	}
	check := func(method, params string) {
		t.Helper()
		req := &jsonrpc.Request{ID: id, Method: method, Params: json.RawMessage(params)}
		if params == "" {
			req.Params = nil
		}
		wantVM, wantErr := validateRequestMetaUnpatched(req)
		d := decodeParams(req, infos)
		gotVM, gotErr := validateDecodedMeta(req, &d)
		if want, got := answer(wantVM, wantErr), answer(gotVM, gotErr); got != want || !reflect.DeepEqual(deep(gotVM), deep(wantVM)) {
			t.Errorf("%s %q:\ngot  %s %+v\nwant %s %+v", method, params, got, deep(gotVM), want, deep(wantVM))
		}
	}
	for _, m := range methods {
		for _, in := range corpus {
			check(m, in)
		}
	}
	mutations(corpus, `{}[]:,"\ 0123456789.-+eEtrufalsn_metaioVvx/`, 50000, func(rng *rand.Rand, text string) { check(methods[rng.Intn(len(methods))], text) })
}

// The check reads the _meta of the decoded params, not the request's text
// again: a decoded _meta that differs from the text's is the one that
// counts (v1.8.0 decoded the text on its own).
func TestDecodedMetaIsTheParams(t *testing.T) {
	id, err := jsonrpc.MakeID(float64(1))
	if err != nil {
		t.Fatal(err)
	}
	req := &jsonrpc.Request{ID: id, Method: methodCallTool, Params: json.RawMessage(`{"name":"x","_meta":{}}`)}
	d := decodeParams(req, NewServer(&Implementation{Name: "t"}, nil).receivingMethodInfos())
	if d.err != nil {
		t.Fatal(d.err)
	}
	d.params.(*CallToolParamsRaw).Meta = Meta{
		MetaKeyProtocolVersion:    protocolVersion20260728,
		MetaKeyClientCapabilities: map[string]any{},
	}
	vm, err := validateDecodedMeta(req, &d)
	if err != nil || !vm.usesNewProtocol || vm.initializeParams.ProtocolVersion != protocolVersion20260728 {
		t.Fatalf("the decoded _meta was not the one checked: %+v, %v", vm, err)
	}
	if vm, _ := validateRequestMetaUnpatched(req); vm.usesNewProtocol {
		t.Fatal("the request's own _meta selects the new protocol")
	}
}

// metaBlindParams are a custom method's params that decode their fields
// but never their _meta: a custom params type may read _meta its own way.
type metaBlindParams struct {
	ParamsBase
	Word string `json:"word"`
}

func (p *metaBlindParams) UnmarshalJSON(b []byte) error {
	var v struct {
		Word string `json:"word"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	p.Word = v.Word
	return nil
}

type echoResult struct {
	ResultBase
	Word string `json:"word"`
}

// Through a server: a 2026-07-28 call of a standard method is answered
// from its decoded params, one whose params do not decode still gets
// invalid params, and a custom method's params, which may not see their
// _meta, are checked from the request's text as before (taking their
// _meta would refuse the call as made before initialization).
func TestDecodedMetaThroughServer(t *testing.T) {
	ctx := context.Background()
	server := NewServer(&Implementation{Name: "t", Version: "1"}, nil)
	AddTool(server, &Tool{Name: "echo"}, func(_ context.Context, _ *CallToolRequest, in struct {
		Word string `json:"word"`
	}) (*CallToolResult, any, error) {
		return &CallToolResult{Content: []Content{&TextContent{Text: in.Word}}}, nil, nil
	})
	if err := AddReceivingCustomMethod(server, "custom/echo", func(_ context.Context, _ *ServerSession, p *metaBlindParams) (*echoResult, error) {
		return &echoResult{Word: p.Word}, nil
	}); err != nil {
		t.Fatal(err)
	}
	st, ct := NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}`
	call := func(n int, method, params string) *jsonrpc.Response {
		t.Helper()
		id, err := jsonrpc.MakeID(float64(n))
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: json.RawMessage(params)}); err != nil {
			t.Fatal(err)
		}
		msg, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.ID != id {
			t.Fatalf("%s: got %#v, want the response to call %d", method, msg, n)
		}
		return resp
	}
	if r := call(1, "custom/echo", `{"word":"hi",`+meta+`}`); r.Error != nil || !strings.Contains(string(r.Result), `"word":"hi"`) {
		t.Errorf("custom/echo at 2026-07-28: result %s, error %v", r.Result, r.Error)
	}
	if r := call(2, methodCallTool, `{"name":"echo","arguments":{"word":"yo"},`+meta+`}`); r.Error != nil || !strings.Contains(string(r.Result), `"text":"yo"`) {
		t.Errorf("tools/call at 2026-07-28: result %s, error %v", r.Result, r.Error)
	}
	var werr *jsonrpc.Error
	if r := call(3, methodCallTool, `{"name":5,`+meta+`}`); !errors.As(r.Error, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("tools/call with a numeric name: error %v, want invalid params", r.Error)
	}
}
