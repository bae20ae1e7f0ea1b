package auth_test

import (
	"fmt"

	"github.com/parsemcp/parsemcp/auth"
)

// A server reached at https://mcp.example.com/mcp, whose tokens come from
// https://login.example.com, tells clients where to sign in.
func ExampleConfig_Challenge() {
	cfg := auth.Config{Issuer: "https://login.example.com", Resource: "https://mcp.example.com/mcp"}
	fmt.Println(cfg.MetadataURL())
	fmt.Println(cfg.Challenge(false))
	// Output:
	// https://mcp.example.com/.well-known/oauth-protected-resource/mcp
	// Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
}
