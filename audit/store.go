package audit

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// AuditClass is the class the store sink writes to. It is master-only and
// hidden from every agent.
const AuditClass = "_AgentAudit"

// StoreSink writes events as `_AgentAudit` objects, in the background: a
// call never waits for its audit write. When the queue is full, or the
// sink is closed, events are dropped, counted and logged (the writer
// reports the drops since its last report after each batch), never
// blocking the server.
type StoreSink struct {
	st    store.Store
	log   *slog.Logger
	queue chan Event
	done  chan struct{}
	// fields are the existing class's fields when it lacks some of the
	// events' (nil: it has them all).
	fields map[string]bool

	mu       sync.Mutex
	closed   bool
	dropped  int // in all
	reported int // dropped as of the last log line
}

// QueueSize bounds the events waiting to be written.
const QueueSize = 10000

// NewStoreSink creates the audit class if needed and starts the writer.
// Close flushes it.
func NewStoreSink(ctx context.Context, st store.Store, log *slog.Logger) (*StoreSink, error) {
	sch := schema()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &StoreSink{st: st, log: log, queue: make(chan Event, QueueSize), done: make(chan struct{})}
	err := st.CreateClass(ctx, sch)
	switch {
	case errors.Is(err, store.ErrClassExists):
		// A class made by an earlier version may lack the newer fields:
		// those are left out of its events (a store cannot add a column
		// here), and the operator is told which.
		if s.fields, err = existingFields(ctx, st, sch, log); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	}
	go s.run()
	return s, nil
}

// Record queues e. An event recorded after Close is dropped and logged.
func (s *StoreSink) Record(_ context.Context, e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.dropped++
		s.reported = s.dropped
		s.log.Error("audit: event dropped: the sink is closed", "tool", e.Tool, "agent_id", e.AgentID, "correlation_id", e.CorrelationID)
		return
	}
	select {
	case s.queue <- e:
	default:
		s.dropped++
	}
}

// reportDrops logs the events dropped for a full queue since the last
// report.
func (s *StoreSink) reportDrops() {
	s.mu.Lock()
	n := s.dropped - s.reported
	s.reported = s.dropped
	s.mu.Unlock()
	if n > 0 {
		s.log.Error("audit: events dropped: the queue was full", "dropped", n, "queue", QueueSize)
	}
}

// Dropped returns how many events were dropped for a full queue.
func (s *StoreSink) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

func (s *StoreSink) run() {
	defer close(s.done)
	for e := range s.queue {
		batch := []parse.Object{s.object(e)}
		for len(batch) < 500 {
			select {
			case more, ok := <-s.queue:
				if !ok {
					s.write(batch)
					s.reportDrops()
					return
				}
				batch = append(batch, s.object(more))
				continue
			default:
			}
			break
		}
		s.write(batch)
		s.reportDrops()
	}
}

func (s *StoreSink) write(batch []parse.Object) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.st.Create(ctx, AuditClass, batch); err != nil {
		s.log.Error("audit: writing to "+AuditClass+" failed", "events", len(batch), "err", err)
	}
}

// Close writes what is queued and stops the writer. It may be called
// more than once.
func (s *StoreSink) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.queue) // under mu: no Record is sending
	}
	s.mu.Unlock()
	<-s.done
}

// existingFields returns the fields of the existing audit class, or nil
// when it has every field of want; it logs the fields it lacks.
func existingFields(ctx context.Context, st store.Store, want parse.Schema, log *slog.Logger) (map[string]bool, error) {
	have, err := st.Schema(ctx, AuditClass)
	if err != nil {
		return nil, err
	}
	var missing []string
	for name := range want.Fields {
		if _, ok := have.Fields[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	slices.Sort(missing)
	log.Warn("audit: the existing "+AuditClass+" class lacks fields its events now carry; they are left out (drop the empty class, or add the fields, to keep them)", "missing", missing)
	fields := map[string]bool{}
	for name := range have.Fields {
		fields[name] = true
	}
	return fields, nil
}

// object is e as an audit object, with only the class's fields when they
// are known.
func (s *StoreSink) object(e Event) parse.Object {
	o := object(e)
	if s.fields != nil {
		for k := range o {
			if !s.fields[k] && !parse.IsSystemField(k) {
				delete(o, k)
			}
		}
	}
	return o
}
