// Package llm is the agent side of parsemcp: a tool-calling loop that puts
// a question to a language model, offers it the tools of an MCP server
// (any parsemcp server, reached as an MCP client), runs the tool calls the
// model asks for and returns the model's answer with a record of what
// happened (tool calls, tokens, estimated cost).
//
// Two providers are built in, each on its vendor's official Go SDK:
// OpenAI-compatible chat completions (OpenAI itself, and local servers
// such as llama.cpp, Ollama, vLLM and LM Studio by base URL) and Anthropic
// Messages. Both support tool calling and streaming of the model's text.
//
// The model sees only what the server lets the connected agent see: the
// loop calls tools through the server's own governance (policy, ACLs,
// limits), never around it.
package llm
