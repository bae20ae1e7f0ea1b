package parserest_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/parserest"
)

// failCounter is an http.RoundTripper that counts the requests that found
// no Parse Server and reports when the count reaches at.
type failCounter struct {
	failed atomic.Int64
	at     int64
	reach  chan struct{}
}

func (f *failCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil && f.failed.Add(1) == f.at {
		close(f.reach)
	}
	return resp, err
}

// TestReadsRetryWithinTheTimeLimit: a read while Parse Server is down is
// retried for as long as the call's deadline allows (it used to give up
// after 8 attempts, about 3.5 s, whatever the time limit), so a read that
// starts during a restart succeeds once the server is back; a read whose
// deadline passes first is unavailable.
func TestReadsRetryWithinTheTimeLimit(t *testing.T) {
	srv := startServer(t)
	fc := &failCounter{at: 12, reach: make(chan struct{})}
	st, err := parserest.Open(context.Background(), parserest.Config{ServerURL: srv.URL(), AppID: srv.AppID(), MasterKey: srv.MasterKey(),
		HTTPClient: &http.Client{Transport: fc}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	note := parse.NewSchema("Note")
	note.Fields["text"] = parse.Field{Type: parse.TypeString}
	if err := st.CreateClass(context.Background(), note); err != nil {
		t.Fatal(err)
	}

	if err := st.Ping(context.Background()); err != nil {
		t.Fatalf("Ping of a running Parse Server: %v", err)
	}
	srv.Stop()
	// /health's probe: one round trip, an outage naming Parse Server.
	var outage *store.Outage
	if err := st.Ping(context.Background()); !errors.As(err, &outage) || outage.Backend != "Parse Server" || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Ping of a stopped Parse Server: %v", err)
	}
	// A short limit: the read gives up as unavailable, not as a timeout.
	short, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err = st.Count(short, &query.Query{Class: "Note"})
	cancel()
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a read past its limit while Parse Server is down: %v", err)
	}

	// A long limit: the read keeps trying past 12 failed attempts, and
	// succeeds when Parse Server is back.
	fc.failed.Store(0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // bounds a hang only
	defer cancel()
	done := make(chan error, 1)
	go func() {
		n, err := st.Count(ctx, &query.Query{Class: "Note"})
		if err == nil && n != 0 {
			err = errors.New("unexpected count")
		}
		done <- err
	}()
	select {
	case <-fc.reach:
	case err := <-done:
		t.Fatalf("the read gave up after %d failed attempts with time left: %v", fc.failed.Load(), err)
	}
	srv.Start()
	if err := <-done; err != nil {
		t.Fatalf("the read once Parse Server was back: %v", err)
	}
}
