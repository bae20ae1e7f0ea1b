package tools

import (
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// projection validates keys and include against the visible schema.
func projection(sch parse.Schema, keys, include StringList) (top []string, sub map[string][]string, inc []string, err error) {
	if keys != nil {
		ks, err := query.ParseKeys(sch, keys)
		if err != nil {
			return nil, nil, nil, err
		}
		top, sub = agent.SplitKeys(ks)
	}
	for _, f := range include {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		head, _, _ := strings.Cut(f, ".") // deeper segments are checked by the scope
		fd, ok := sch.Fields[head]
		if !ok {
			return nil, nil, nil, query.DenyField(sch, head, "include", "")
		}
		if fd.Type != parse.TypePointer {
			return nil, nil, nil, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("include %q: only Pointer fields can be included; it is a %s", f, fd.Type), Details: map[string]any{"argument": "include"}}
		}
		inc = append(inc, f)
	}
	incHeads := make([]string, len(inc))
	for i, f := range inc {
		incHeads[i], _, _ = strings.Cut(f, ".")
	}
	for head := range sub {
		if sch.Fields[head].Type == parse.TypePointer && !containsStr(incHeads, head) {
			return nil, nil, nil, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("keys %q.…: add %q to include to project the pointed-to object", head, head), Details: map[string]any{"argument": "keys"}}
		}
	}
	return top, sub, inc, nil
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
