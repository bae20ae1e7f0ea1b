//go:build !llm

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
)

// In the server's build, ask, chat and console are stand-ins that run the
// same command of parsemcp-llm (llmcommands.go).

func newAsk() *cobra.Command     { return llmStandIn("ask QUESTION", askShort) }
func newChat() *cobra.Command    { return llmStandIn("chat", chatShort) }
func newConsole() *cobra.Command { return llmStandIn("console", consoleShort) }

// llmStandIn is the command use of the llm build: it runs that command of
// parsemcp-llm with the same arguments, flags and all, in this process's
// place (its help too: `parsemcp chat --help` is parsemcp-llm's).
func llmStandIn(use, short string) *cobra.Command {
	name, _, _ := strings.Cut(use, " ")
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + ".\n\nThis parsemcp is built without the commands that talk to a language model;\n" +
			"it runs `" + llmBinary + " " + name + "` (beside this binary, else on PATH) with the same\n" +
			"arguments. `parsemcp " + name + " --help` shows that command's flags.",
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			path, err := findLLMBinary(name)
			if err != nil {
				return err
			}
			return runInstead(path, append([]string{path, name}, args...), append(os.Environ(), execLLMEnv+"=1"))
		},
	}
}

// findLLMBinary finds parsemcp-llm: beside this binary first (a release
// archive's pair, the same version), then on PATH.
func findLLMBinary(command string) (string, error) {
	if os.Getenv(execLLMEnv) != "" {
		self, _ := os.Executable()
		return "", fmt.Errorf("%s: %s was run in place of parsemcp %s but is built without the LLM commands; build it with -tags llm: go build -tags llm -o %s ./cmd/parsemcp",
			command, self, command, llmBinary)
	}
	file := llmBinary
	if runtime.GOOS == "windows" {
		file += ".exe"
	}
	if self, err := os.Executable(); err == nil {
		if path, err := exec.LookPath(filepath.Join(filepath.Dir(self), file)); err == nil {
			return path, nil
		}
	}
	if path, err := exec.LookPath(file); err == nil {
		return path, nil
	}
	return "", fmt.Errorf("%s: this parsemcp is built without the commands that talk to a language model (ask, chat, console), which would cost the server about 20 MB of memory, "+
		"and no %s is beside it or on PATH. Put the release archive's %s beside it, or build one from a checkout: go build -tags llm -o %s ./cmd/parsemcp "+
		"(go run -tags llm ./cmd/parsemcp %s runs the command directly; go install -tags llm ./cmd/parsemcp installs a parsemcp with every command)",
		command, file, file, file, command)
}
