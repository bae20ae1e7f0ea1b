package parseserver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// scriptDir is the repository's scripts/parse-server, found from this
// file's location (the helper runs only inside the repository's tests).
func scriptDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the parseserver package source")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "parse-server")
	if _, err := os.Stat(filepath.Join(dir, "server.js")); err != nil {
		return "", fmt.Errorf("scripts/parse-server not found: %v", err)
	}
	return dir, nil
}

var (
	installOnce sync.Once
	installDir  string // the install (holds node_modules)
	installErr  error
)

// install runs scripts/parse-server/install.sh once per process and
// returns the directory it installed into.
func install() (string, error) {
	installOnce.Do(func() {
		installDir, installErr = runInstall()
	})
	return installDir, installErr
}

func runInstall() (string, error) {
	scripts, err := scriptDir()
	if err != nil {
		return "", err
	}
	for _, tool := range []string{"node", "npm", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s is not installed", tool)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(scripts, "install.sh"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:] // the last line says why
		}
		return "", fmt.Errorf("scripts/parse-server/install.sh failed (%v): %s", err, msg)
	}
	dir := strings.TrimSpace(stdout.String())
	if i := strings.LastIndexByte(dir, '\n'); i >= 0 {
		dir = dir[i+1:]
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "parse-server")); err != nil {
		return "", fmt.Errorf("install.sh reported %q, which has no parse-server: %v", dir, err)
	}
	return dir, nil
}
