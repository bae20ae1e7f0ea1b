// Package subscribe is the resource-subscription machinery behind
// resources/subscribe, independent of any MCP SDK (mcpserver wires it in):
//
//   - Index: which sessions subscribe to which URIs, in both directions,
//     with a cap per session and a cap on the sessions holding
//     subscriptions.
//   - Debouncer: collapses a burst of change events on one (session, URI)
//     into one notification, fired a fixed window after the burst's first
//     event.
//   - Notifier: fans opaque change messages out to every server instance:
//     NewLocal (one process) or NewRedis (Redis pub/sub, reconnecting, with
//     a "resync" message after a gap). Dedup drops a message that arrives
//     twice (from the database feed and from Redis).
//
// A typical wiring: the store's change feed and a Notifier's Listen both
// feed one handler; the handler drops duplicates with Dedup, maps the
// changed class to URIs, looks up Index.Sessions for each URI and calls
// Debouncer.Trigger(Key(session, uri)); the Debouncer's fire function sends
// notifications/resources/updated to that session, and a failed send calls
// Index.Prune and Debouncer.CancelSession. A message with ID ResyncID means
// changes may have been missed: notify every subscribed URI.
package subscribe
