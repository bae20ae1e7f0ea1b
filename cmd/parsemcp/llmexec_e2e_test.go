package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The server's build links no LLM SDK; parsemcp-llm links both.
func TestServerBuildLeavesOutLLMSDKs(t *testing.T) {
	sdks := []string{"github.com/openai/openai-go", "github.com/anthropics/anthropic-sdk-go", "github.com/chzyer/readline"}
	modules := func(bin string) string {
		out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("go version -m %s: %v\n%s", bin, err, out)
		}
		return string(out)
	}
	server, full := modules(binary), modules(llmBinaryPath)
	for _, m := range sdks {
		if strings.Contains(server, m) {
			t.Errorf("the server's build links %s", m)
		}
		if !strings.Contains(full, m) {
			t.Errorf("%s does not link %s", llmBinary, m)
		}
	}
}

// placeBinary puts the file at from into dir under name, hard-linked when
// it can be (the test binaries are large).
func placeBinary(t *testing.T, from, dir, name string) string {
	t.Helper()
	to := filepath.Join(dir, name)
	if err := os.Link(from, to); err == nil {
		return to
	}
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return to
}

// ask, chat and console of the server's build run parsemcp-llm's: beside
// it, else on PATH; without one they say how to get it, and a parsemcp-llm
// that is itself a server's build is refused rather than run in a loop.
func TestLLMCommandsRunParsemcpLLM(t *testing.T) {
	noLLM := "PATH=" + filepath.Dir(goBinary(t)) // go, and no parsemcp-llm
	for _, command := range []string{"ask", "chat", "console"} {
		t.Run(command+"/beside", func(t *testing.T) {
			stdout, stderr, code := run(t, []string{noLLM}, command, "--help")
			// ask keeps no input history; chat and console do.
			history := strings.Contains(stdout, "--history-file")
			if code != 0 || !strings.Contains(stdout, "--max-iterations") || history != (command != "ask") {
				t.Fatalf("%s --help: exit %d\nstdout: %s\nstderr: %s", command, code, stdout, stderr)
			}
		})
	}
	t.Run("exit code", func(t *testing.T) {
		// The llm build's own refusal and exit code come through.
		_, stderr, code := run(t, []string{noLLM}, "ask")
		if code != 1 || !strings.Contains(stderr, "accepts 1 arg(s), received 0") {
			t.Fatalf("ask without a question: exit %d, stderr %s", code, stderr)
		}
	})
	alone := placeBinary(t, binary, t.TempDir(), "parsemcp")
	t.Run("missing", func(t *testing.T) {
		stdout, stderr, code := runBinary(t, alone, []string{noLLM}, "chat", "--model", "m")
		if code != 1 || stdout != "" || !strings.Contains(stderr, "built without the commands that talk to a language model") ||
			!strings.Contains(stderr, "go build -tags llm -o parsemcp-llm ./cmd/parsemcp") {
			t.Fatalf("chat without parsemcp-llm: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
	})
	t.Run("on PATH", func(t *testing.T) {
		onPath := noLLM + string(os.PathListSeparator) + filepath.Dir(llmBinaryPath)
		stdout, stderr, code := runBinary(t, alone, []string{onPath}, "console", "--help")
		if code != 0 || !strings.Contains(stdout, "render_prompt") {
			t.Fatalf("console --help with parsemcp-llm on PATH: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
	})
	t.Run("not an llm build", func(t *testing.T) {
		dir := t.TempDir()
		lean := placeBinary(t, binary, dir, "parsemcp")
		placeBinary(t, binary, dir, llmBinary)
		_, stderr, code := runBinary(t, lean, []string{noLLM}, "ask", "how many?")
		if code != 1 || !strings.Contains(stderr, "is built without the LLM commands; build it with -tags llm") {
			t.Fatalf("a server's build as parsemcp-llm: exit %d, stderr %s", code, stderr)
		}
	})
}

func goBinary(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	return path
}
