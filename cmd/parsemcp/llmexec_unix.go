//go:build !llm && unix

package main

import (
	"fmt"
	"syscall"
)

// runInstead replaces this process with path: the terminal, the signals
// and the exit code are the command's own.
func runInstead(path string, argv, env []string) error {
	err := syscall.Exec(path, argv, env)
	return fmt.Errorf("run %s: %w", path, err)
}
