//go:build llm

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP server of ask and chat --server-command runs as a child over
// stdio. Its stderr (a parsemcp server logs at INFO there) would land
// among the answer on the terminal, so it goes to --server-log FILE ("-":
// this process's stderr) or, by default, nowhere but a small buffer whose
// last lines explain a child that fails to start.

// serverLogTail is how much of the child's stderr is kept by default.
const serverLogTail = 4 << 10

// startServerCommand starts l.serverCommand and connects to it with opts.
func (l *llmFlags) startServerCommand(ctx context.Context, opts *mcp.ClientOptions) (*session, error) {
	args := strings.Fields(l.serverCommand)
	cmd := exec.Command(args[0], args[1:]...)
	tail := &tailBuffer{max: serverLogTail}
	closeLog := func() {}
	switch l.serverLog {
	case "":
		cmd.Stderr = tail
	case "-":
		cmd.Stderr = os.Stderr
	default:
		f, err := os.OpenFile(l.serverLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("--server-log: %w", err)
		}
		cmd.Stderr = io.MultiWriter(f, tail)
		closeLog = func() { f.Close() }
	}
	cs, err := l.dial(ctx, &mcp.CommandTransport{Command: cmd}, opts)
	if err != nil {
		err = fmt.Errorf("start %s: %w", cmd.Path, err)
		closeLog()
		if last := tail.String(); last != "" {
			return nil, fmt.Errorf("%w\nthe server's last log lines:\n%s", err, strings.TrimRight(last, "\n"))
		}
		return nil, err
	}
	return &session{cs: cs, where: "stdio: " + l.serverCommand, close: func() { cs.Close(); closeLog() }}, nil
}

// tailBuffer keeps the last max bytes written to it, from whole lines
// when it can.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		cut := over
		if i := bytes.IndexByte(t.buf[over:], '\n'); i >= 0 && i < len(t.buf)-over-1 {
			cut = over + i + 1
		}
		t.buf = append(t.buf[:0], t.buf[cut:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
