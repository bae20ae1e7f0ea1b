//go:build llm

package main

// What the interactive commands (chat, console) share about the terminal:
// line editing, the input history file, and asking a person to approve a
// destructive change at the prompt.

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/chzyer/readline"
)

// privateFile makes path (and its directory) if missing, readable by its
// owner only, and takes group's and others' access away from an existing
// one: the history holds every question typed, which may quote the data.
func privateFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return f.Chmod(perm &^ 0o077)
	}
	return nil
}

// defaultHistoryFile is where a command keeps its input history by
// default: name in parsemcp's directory of the user's cache directory
// ("" when there is none).
func defaultHistoryFile(name string) string {
	dir, err := os.UserCacheDir()
	if err != nil || dir == "" {
		return ""
	}
	return filepath.Join(dir, "parsemcp", name)
}

// newLineEditor is the line editor of an interactive command: prompt,
// history kept in historyFile ("" keeps none; one that cannot be made
// private is not used, with a notice on stderr), Tab completion by
// complete, and eof echoed when Ctrl-D ends the input.
func newLineEditor(prompt, historyFile string, complete readline.AutoCompleter, eof string) (*readline.Instance, error) {
	if historyFile != "" {
		if err := privateFile(historyFile); err != nil {
			fmt.Fprintf(os.Stderr, "the input history is not kept: %v\n", err)
			historyFile = ""
		}
	}
	return readline.NewEx(&readline.Config{
		Prompt:            prompt,
		HistoryFile:       historyFile,
		HistorySearchFold: true,
		AutoComplete:      complete,
		InterruptPrompt:   "^C",
		EOFPrompt:         eof,
	})
}

// promptApproval asks the person at rl's prompt to approve a destructive
// change (the server's elicitation), then restores prompt; before runs
// first (e.g. to end a line of streamed text). Anything but y or yes, and
// an interrupted input, is a no.
func promptApproval(rl *readline.Instance, prompt string, before func()) func(context.Context, string) (bool, error) {
	return func(_ context.Context, message string) (bool, error) {
		if before != nil {
			before()
		}
		rl.SetPrompt(message + " [y/N] ")
		line, err := rl.Readline()
		rl.SetPrompt(prompt)
		if err != nil {
			return false, nil
		}
		a := strings.ToLower(strings.TrimSpace(line))
		return a == "y" || a == "yes", nil
	}
}

// sessionContext is the context of an interactive session at rl's prompt:
// Ctrl-C does not end it (it stops the running request: untilInterrupt;
// main's signal context ends at the first one), SIGTERM does, and closes
// rl so that the prompt returns. stop releases the signal.
func sessionContext(parent context.Context, rl *readline.Instance) (ctx context.Context, stop func()) {
	return cancelOnSignal(context.WithoutCancel(parent), syscall.SIGTERM, func() { rl.Close() })
}

// untilInterrupt is parent until Ctrl-C: one request of a session, which
// Ctrl-C stops while the session goes on. stop releases the signal.
func untilInterrupt(parent context.Context) (ctx context.Context, stop func()) {
	return cancelOnSignal(parent, os.Interrupt, nil)
}

// cancelOnSignal is parent until sig arrives; then also runs (when not
// nil). stop releases the signal.
func cancelOnSignal(parent context.Context, sig os.Signal, then func()) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sig)
	go func() {
		select {
		case <-ch:
			cancel()
			if then != nil {
				then()
			}
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}
