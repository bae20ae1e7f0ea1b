package mcpserver

import (
	"net/http"
	"strings"
	"time"
)

// responseWriter marks SSE responses X-Accel-Buffering: no (so nginx does
// not buffer them), records the status, and lets the handler see the
// headers the SDK set before they are sent.
type responseWriter struct {
	http.ResponseWriter
	status   int
	onHeader func(status int)
	// timeout bounds each Write and Flush (0: none).
	timeout time.Duration
}

// deadline gives the next write timeout to finish.
func (w *responseWriter) deadline() {
	if w.timeout > 0 {
		_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

func (w *responseWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			w.Header().Set("X-Accel-Buffering", "no")
		}
		if w.onHeader != nil {
			w.onHeader(status)
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.deadline()
	return w.ResponseWriter.Write(b)
}

func (w *responseWriter) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.deadline()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
