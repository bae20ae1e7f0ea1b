package tools_test

import (
	"context"
	"errors"
	"testing"

	"github.com/parsemcp/parsemcp/tools"
)

func TestRegisterRefusesDuplicates(t *testing.T) {
	r := tools.NewRegistry()
	h := func(context.Context, *tools.Call) (any, error) { return "mine", nil }
	if err := r.Register(&tools.Tool{Name: "query_class", Handler: h}); !errors.Is(err, tools.ErrDuplicateTool) {
		t.Fatalf("a built-in name: %v", err)
	}
	if got, _ := r.Get("query_class"); got.Category != tools.CategoryQuery {
		t.Fatal("the refused tool replaced the built-in")
	}
	mine := &tools.Tool{Name: "mine", Handler: h}
	if err := r.Register(mine); err != nil {
		t.Fatal(err)
	}
	if mine.Category != "" || mine.Timeout != 0 || mine.Input != nil {
		t.Fatalf("Register changed the caller's value: %+v", mine)
	}
	if err := r.Register(&tools.Tool{Name: "mine", Handler: h}); !errors.Is(err, tools.ErrDuplicateTool) {
		t.Fatalf("a second mine: %v", err)
	}
	if err := r.Replace(&tools.Tool{Name: "mine", Description: "v2", Handler: h}); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Get("mine"); got.Description != "v2" || got.Category != tools.CategoryCustom {
		t.Fatalf("replaced: %+v", got)
	}
}
