package tools_test

import (
	"os"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/tools"
)

// The README's tool table names every built-in tool.
func TestReadmeListsEveryTool(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `") {
			first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
			rows = append(rows, first)
		}
	}
	for _, tl := range tools.Builtin() {
		found := false
		for _, r := range rows {
			if strings.Contains(r, "`"+tl.Name+"`") {
				found = true
			}
		}
		if !found {
			t.Errorf("README's tool table lacks %s", tl.Name)
		}
	}
}
