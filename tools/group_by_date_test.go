package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// Rows per interval of a Date field, in key order unless sort says; each
// interval has its key format.
func TestGroupByDate(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "day"})
	want := []any{group("2025-05-01", 1), group("2025-05-02", 1), group("2025-05-03", 1), group("2025-05-04", 1), group("2025-05-05", 1)}
	if d := cmp.Diff(want, out["groups"]); d != "" {
		t.Fatalf("day (-want +got):\n%s", d)
	}
	if out["interval"] != "day" || out["timezone"] != "UTC" || out["sort"] != "key_asc" || out["operation"] != "count" {
		t.Fatalf("%v", out)
	}
	for interval, key := range map[string]string{"year": "2025", "quarter": "2025-Q2", "month": "2025-05", "week": "2025-W18"} {
		out := e.ok("group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": interval, "where": map[string]any{"objectId": t1}})
		if d := cmp.Diff([]any{group(key, 1)}, out["groups"]); d != "" {
			t.Errorf("%s (-want +got):\n%s", interval, d)
		}
	}
	out = e.ok("group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "month", "operation": "sum", "value_field": "priority"})
	if d := cmp.Diff([]any{group("2025-05", 12)}, out["groups"]); d != "" {
		t.Fatalf("sum (-want +got):\n%s", d)
	}
	out = e.ok("group_by_date", map[string]any{"class_name": "Project", "field": "createdAt", "interval": "quarter"}) // February, March, April
	if d := cmp.Diff([]any{group("2025-Q1", 2), group("2025-Q2", 1)}, out["groups"]); d != "" {
		t.Fatalf("quarters (-want +got):\n%s", d)
	}
	out = e.ok("group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "quarter", "operation": "avg", "value_field": "priority"})
	if d := cmp.Diff([]any{group("2025-Q2", 12.0/5)}, out["groups"]); d != "" {
		t.Fatalf("a quarter's average (-want +got):\n%s", d)
	}
	// Rows without the date are in no bucket.
	out = e.ok("group_by_date", map[string]any{"class_name": "Ticket", "field": "due", "interval": "day"})
	if d := cmp.Diff([]any{group("2025-06-01", 1)}, out["groups"]); d != "" {
		t.Fatalf("due (-want +got):\n%s", d)
	}
}

// The buckets are the time zone's: a fixed offset or an IANA name.
func TestGroupByDateTimezone(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	for _, tz := range []string{"-05:00", "America/New_York"} {
		out := e.ok("group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "day", "timezone": tz, "limit": 1})
		if d := cmp.Diff([]any{group("2025-04-30", 1)}, out["groups"]); d != "" || out["timezone"] != tz {
			t.Errorf("%s (-want +got):\n%s", tz, d)
		}
	}
	e.refused("group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "day", "timezone": "Mars/Olympus"}, tools.CodeInvalidArgument, `argument "timezone" must be an IANA time zone`)
	e.refused("group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "day", "timezone": "Local"}, tools.CodeInvalidArgument, `argument "timezone" must be an IANA time zone`)
	e.refused("group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "day", "timezone": "+15:00"}, tools.CodeInvalidArgument, `argument "timezone" must be an IANA time zone`)
}

// limit cuts the buckets, in the order asked for; next_call continues.
func TestGroupByDatePages(t *testing.T) {
	e := newEnv(t, asUser(agent.Readonly, "uAlice0001"))
	out := e.ok("group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "day", "sort": "key_desc", "limit": 3})
	if d := cmp.Diff([]any{group("2025-05-04", 1), group("2025-05-03", 1), group("2025-05-02", 1)}, out["groups"]); d != "" {
		t.Fatalf("page 1, t5 unreadable (-want +got):\n%s", d)
	}
	out = e.next("group_by_date", out)
	if d := cmp.Diff([]any{group("2025-05-01", 1)}, out["groups"]); d != "" || out["next_call"] != nil {
		t.Fatalf("page 2 (-want +got):\n%s", d)
	}
}

func TestGroupByDateArguments(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"field": "status", "interval": "day"}, `argument "field" group_by_date needs a Date field; "status" is String`},
		{map[string]any{"field": "createdAt"}, `argument "interval" is required`},
		{map[string]any{"field": "createdAt", "interval": "fortnight"}, `argument "interval" must be one of second, minute, hour, day, week, month, quarter or year`},
		{map[string]any{"field": "createdAt", "interval": "day", "limit": 5001}, `argument "limit" must be between 1 and 5000`},
		{map[string]any{"field": "createdAt", "interval": "day", "operation": "sum"}, `argument "value_field" sum needs a Number field of Ticket`},
	} {
		c.args["class_name"] = "Ticket"
		e.refused("group_by_date", c.args, tools.CodeInvalidArgument, c.want)
	}
	e.refused("group_by_date", map[string]any{"class_name": "Ticket", "field": "nope", "interval": "day"}, fieldDenied, `field: "nope" is not a field of Ticket`)
}

// With full scans refused, group_by_date is judged by its where as
// group_by is.
func TestGroupByDateFullScanGuard(t *testing.T) {
	e := newEnv(t, master(agent.Readonly)).refusingScans(2)
	args := map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "month"}
	e.refused("group_by_date", args, scanRefused, ticketScanRefused)
	args["where"] = map[string]any{"objectId": t1}
	if out := e.ok("group_by_date", args); !cmp.Equal(out["groups"], []any{group("2025-05", 1)}) {
		t.Fatalf("an indexed where: %v", out["groups"])
	}
	e.withCatalog(allowScans("Ticket")).ok("group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "month"})
}
