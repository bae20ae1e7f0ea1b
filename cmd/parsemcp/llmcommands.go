package main

// The commands that talk to a language model (ask, chat, and the console,
// which can) link the OpenAI and Anthropic SDKs. Linked, the SDKs cost a
// process about 20 MB of resident memory whatever command it runs: the
// runtime reads the type of each of their 2,500 interface tables before
// main, and their package inits run (docs/PERFORMANCE.md, Memory). So they
// are built only with the llm build tag:
//
//	go build -tags llm -o parsemcp-llm ./cmd/parsemcp   # every command
//	go build ./cmd/parsemcp                             # the server's binary
//
// Without the tag, ask, chat and console are stand-ins that run the same
// command of a parsemcp-llm beside this binary or on PATH (llmexec.go); the
// release archives ship both binaries.

// llmBinary is the name of the build with the llm tag.
const llmBinary = "parsemcp-llm"

// execLLMEnv is set in the environment of a parsemcp-llm that a stand-in
// runs: a stand-in that finds it set was itself reached that way, and
// stops instead of running itself again.
const execLLMEnv = "PARSEMCP_EXEC_LLM"

// The commands' one-line descriptions, the same in both builds.
const (
	askShort     = "Ask a language model one question about the data; it answers by calling the server's tools (exit 3 when it stopped before answering)"
	chatShort    = "Talk with a language model about the data, in the terminal; it answers by calling the server's tools"
	consoleShort = "An interactive console over the tools, prompts and protocol of a store's server, as one agent"
)
