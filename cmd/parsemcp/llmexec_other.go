//go:build !llm && !unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// runInstead runs path as a child with this process's standard streams
// and ends with its exit code (there is no exec(2) to replace the process
// with it). Ctrl-C reaches the child too: it shares the console.
func runInstead(path string, argv, env []string) error {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &exitError{code: ee.ExitCode()}
	}
	if err != nil {
		return fmt.Errorf("run %s: %w", path, err)
	}
	return nil
}
