package audit_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/parsemcp/parsemcp/audit"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// syncBuffer is a log destination safe for the sink's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// heldStore is a real store whose audit writes wait until released, so
// the test can fill the sink's queue.
type heldStore struct {
	store.Store
	writing chan struct{} // receives when a write starts
	release chan struct{}
}

func (h *heldStore) Create(ctx context.Context, class string, objs []parse.Object) error {
	if class == audit.AuditClass {
		h.writing <- struct{}{}
		<-h.release
	}
	return h.Store.Create(ctx, class, objs)
}

func open(t *testing.T) store.Store {
	st, err := sqlite.Create(context.Background(), filepath.Join(t.TempDir(), "a.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func count(t *testing.T, st store.Store) int64 {
	n, err := st.Count(context.Background(), &query.Query{ReadACL: query.NoACLFilter, Class: audit.AuditClass})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A full queue drops events and the writer logs how many; an event
// recorded after Close (a call that ended late) is dropped and logged,
// never a panic.
func TestStoreSinkDrops(t *testing.T) {
	ctx := context.Background()
	st := &heldStore{Store: open(t), writing: make(chan struct{}), release: make(chan struct{})}
	var logs syncBuffer
	sink, err := audit.NewStoreSink(ctx, st, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	e := audit.Event{Event: "tool_call", Tool: "count_objects", AgentID: "a1"}
	sink.Record(ctx, e)
	<-st.writing // the writer holds one event and waits in Create
	for range audit.QueueSize + 7 {
		sink.Record(ctx, e)
	}
	if sink.Dropped() != 7 {
		t.Fatalf("dropped %d, want 7", sink.Dropped())
	}
	go func() {
		for range st.writing { // the remaining batches
		}
	}()
	close(st.release)
	sink.Close()
	close(st.writing)
	if !strings.Contains(logs.String(), `"msg":"audit: events dropped: the queue was full","dropped":7`) {
		t.Fatalf("drops not logged: %s", logs.String())
	}
	if n := count(t, st); n != audit.QueueSize+1 {
		t.Fatalf("%d events written, want %d", n, audit.QueueSize+1)
	}

	sink.Record(ctx, audit.Event{Event: "tool_call", Tool: "late_tool", CorrelationID: "c-late"})
	sink.Close() // twice is fine
	if sink.Dropped() != 8 || !strings.Contains(logs.String(), `"msg":"audit: event dropped: the sink is closed","tool":"late_tool"`) {
		t.Fatalf("late event: dropped %d, logs %s", sink.Dropped(), logs.String())
	}
}

// An _AgentAudit class made by an earlier version, without the newer
// fields, keeps receiving events: the fields it lacks are left out and
// named once in the log, never a failed write.
func TestStoreSinkOlderClass(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	old := parse.NewSchema(audit.AuditClass)
	for _, name := range []string{"tool", "agentId", "correlationId"} {
		old.Fields[name] = parse.Field{Type: parse.TypeString}
	}
	old.Fields["success"] = parse.Field{Type: parse.TypeBoolean}
	if err := st.CreateClass(ctx, old); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	sink, err := audit.NewStoreSink(ctx, st, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	sink.Record(ctx, audit.Event{Event: "tool_call", Tool: "count_objects", AgentID: "a1", CorrelationID: "c1", RequestID: "r1", TraceID: "t1", Success: true})
	sink.Close()
	rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: audit.AuditClass, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0]["tool"] != "count_objects" || rows[0]["correlationId"] != "c1" || rows[0]["requestId"] != nil {
		t.Fatalf("rows %v", rows)
	}
	if !strings.Contains(logs.String(), `lacks fields`) || !strings.Contains(logs.String(), `"requestId"`) || strings.Contains(logs.String(), "audit: writing") {
		t.Fatalf("log: %s", logs.String())
	}
}
