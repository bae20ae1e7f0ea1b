// Package federation merges the tools of remote expert agents into this
// server's tool list. The agents are processes on an MQTT v5 broker: the
// server (the platform) asks each connected agent for its tools and proxies
// tool calls to it over request/response topics, with a response topic and
// correlation data on every request (the correlation id is repeated in the
// payload as a safety net).
//
// The platform side is a Platform: one long-lived broker connection
// (autopaho, reconnecting), a catalog of the agents that announced
// themselves on their presence topics, the remote tools they offer
// (namespaced so they cannot shadow the server's own), an LRU of response
// subscriptions with a TTL extended on reuse, and an LRU of remote tool
// annotations used by the token-scope checks. The remote side is
// ServeAgent, which serves a Provider's tools (a ToolSet of Go functions,
// or any stdio MCP server bridged by mcpserver.Bridge) on the broker.
//
// Personal access tokens (Token, TokenStore) live here too: they are the
// credentials whose scopes (read-only or read-write, optionally one team)
// narrow what a caller may reach of both the server's tools and the remote
// ones. The package holds no MCP SDK types; mcpserver wires a Platform into
// tools/list and tools/call. docs/FEDERATION.md describes the topics, the
// payloads and the broker's ACL.
package federation
