package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/llm/llmtest"
)

// The history file is private: made 0600, and an existing one readable
// by others is made so too, its lines kept.
func TestChatHistoryFilePrivate(t *testing.T) {
	fake := llmtest.NewOpenAI(t, llmtest.Counter("Ticket"))
	dir := t.TempDir()
	made := filepath.Join(dir, "new", "history")
	open := filepath.Join(dir, "history")
	if err := os.WriteFile(open, []byte("an old question\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	for _, file := range []string{made, open} {
		// No terminal: chat reads an empty input and ends.
		stdout, stderr, code := run(t, llmEnv(t), "chat", "--demo", "--demo-rows", "600", "--model", "m", "--base-url", fake.BaseURL, "--history-file", file)
		if code != 0 || !strings.Contains(stdout, "bye") {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v %v, want 0600", file, fi.Mode(), err)
		}
	}
	if b, err := os.ReadFile(open); err != nil || string(b) != "an old question\n" {
		t.Errorf("the existing history: %q %v", b, err)
	}
}
