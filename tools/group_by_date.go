package tools

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

// MaxDateBuckets bounds the buckets group_by_date reads before sorting.
const MaxDateBuckets = 100000

var offsetRE = regexp.MustCompile(`^[+-](0\d|1[0-4]):[0-5]\d$`)

// dateIntervals are the intervals of group_by_date, smallest first.
var dateIntervals = []string{"second", "minute", "hour", "day", "week", "month", "quarter", "year"}

// dateParts are the group key components of each interval, as the date
// operator each one uses.
var dateParts = map[string][][2]string{
	"year":    {{"y", "$year"}},
	"quarter": {{"y", "$year"}, {"m", "$month"}},
	"month":   {{"y", "$year"}, {"m", "$month"}},
	"week":    {{"y", "$isoWeekYear"}, {"w", "$isoWeek"}},
	"day":     {{"y", "$year"}, {"m", "$month"}, {"d", "$dayOfMonth"}},
	"hour":    {{"y", "$year"}, {"m", "$month"}, {"d", "$dayOfMonth"}, {"h", "$hour"}},
	"minute":  {{"y", "$year"}, {"m", "$month"}, {"d", "$dayOfMonth"}, {"h", "$hour"}, {"i", "$minute"}},
	"second":  {{"y", "$year"}, {"m", "$month"}, {"d", "$dayOfMonth"}, {"h", "$hour"}, {"i", "$minute"}, {"s", "$second"}},
}

// groupByDateName is the tool's name (its next_call names it too).
const groupByDateName = "group_by_date"

func groupByDateTool() *Tool {
	return &Tool{
		Name:        groupByDateName,
		Op:          parse.OpFind,
		Category:    CategoryAggregate,
		Title:       "Group by date",
		Description: "Group by interval of a Date field.",
		Permission:  agent.Readonly,
		Timeout:     60 * time.Second,
		ReadOnly:    true,
		Input: schemaFor[groupByDateArgs](groupInputs(map[string]*jsonschema.Schema{
			"interval": enumSchema("bucket size", "", dateIntervals...),
			"timezone": {Type: "string", Default: mustJSON("UTC"), Description: "IANA name or ±hh:mm"},
		}, "key_asc", DefaultDistinctLimit, MaxDistinctLimit)),
		Handler: groupByDate,
	}
}

type groupByDateArgs struct {
	groupCommon
	Interval string `json:"interval" jsonschema:"hour, day, week, month, quarter or year"`
	Timezone string `json:"timezone,omitempty" jsonschema:"IANA name such as America/New_York, or a fixed offset such as +05:30 (default UTC)"`
}

func groupByDate(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[groupByDateArgs](c.Args)
	if err != nil {
		return nil, err
	}
	cls, f, stages, acc, sortBy, err := groupSetup(ctx, c, args.groupCommon, "key_asc")
	if err != nil {
		return nil, err
	}
	sch := cls.Schema
	if f.Type != parse.TypeDate {
		return nil, argErr("field", "group_by_date needs a Date field; %q is %s", args.Field, f.Type)
	}
	interval, _ := enumMember(dateIntervals, args.Interval)
	parts, ok := dateParts[interval]
	if !ok {
		return nil, argErr("interval", "must be one of %s, got %q", strings.Join(dateIntervals, ", "), args.Interval)
	}
	tz := args.Timezone
	switch {
	case tz == "" || strings.EqualFold(tz, "UTC") || tz == "Z":
		tz = "UTC"
	case offsetRE.MatchString(tz):
	default:
		if _, err := time.LoadLocation(tz); err != nil || strings.HasPrefix(tz, "Local") {
			return nil, argErr("timezone", "must be an IANA time zone such as Europe/Paris or an offset such as +05:30, got %q", tz)
		}
	}
	limit, err := intArg("limit", args.Limit, DefaultDistinctLimit, 1, MaxDistinctLimit)
	if err != nil {
		return nil, err
	}
	key := map[string]any{}
	for _, p := range parts {
		date := any("$" + args.Field)
		if tz != "UTC" {
			date = map[string]any{"date": "$" + args.Field, "timezone": tz}
		}
		key[p[0]] = map[string]any{p[1]: date}
	}
	op := opName(args.Operation)
	group := map[string]any{"_id": key, "value": acc}
	if interval == "quarter" && op == "avg" { // months fold into quarters: keep sums and counts
		group["value"] = map[string]any{"$sum": "$" + args.ValueField}
		group["n"] = map[string]any{"$sum": 1}
		stages = append(stages, map[string]any{"$match": map[string]any{args.ValueField: map[string]any{"$exists": true}}})
	}
	stages = append(stages, map[string]any{"$group": group}, map[string]any{"$limit": MaxDateBuckets})
	params := map[string]any{"field": args.Field, "interval": interval, "timezone": tz, "operation": op, "sort": sortBy, "limit": limit}
	if args.ValueField != "" {
		params["value_field"] = args.ValueField
	}
	if args.DryRun {
		if err := checkStages(ctx, c, cls, stages); err != nil {
			return nil, err
		}
		return dryRun(sch.ClassName, params, stages), nil
	}
	_, rows, err := runStages(ctx, c, cls, stages)
	if err != nil {
		return nil, err
	}
	type bucket struct {
		key        string
		value, n   float64
		hasValue   bool
		components map[string]any
	}
	byKey := map[string]*bucket{}
	var order []string
	for _, r := range rows {
		k, _ := r["objectId"].(map[string]any)
		label, ok := bucketKey(interval, k)
		if !ok {
			continue // rows without the date
		}
		v, hasV := number(r["value"])
		n, _ := number(r["n"])
		b, seen := byKey[label]
		if !seen {
			b = &bucket{key: label}
			byKey[label] = b
			order = append(order, label)
		}
		switch {
		case !hasV:
		case !b.hasValue:
			b.value, b.hasValue = v, true
		case op == "min":
			b.value = min(b.value, v)
		case op == "max":
			b.value = max(b.value, v)
		default: // count, sum, and the sums of a quarterly avg
			b.value += v
		}
		b.n += n
	}
	groups := make([]*bucket, 0, len(order))
	for _, k := range order {
		b := byKey[k]
		if interval == "quarter" && op == "avg" && b.n > 0 {
			b.value /= b.n
		}
		groups = append(groups, b)
	}
	sort.SliceStable(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		switch sortBy {
		case "key_desc":
			return a.key > b.key
		case "value_desc":
			if a.value != b.value {
				return a.value > b.value
			}
		case "value_asc":
			if a.value != b.value {
				return a.value < b.value
			}
		}
		return a.key < b.key
	})
	groups = groups[min(args.Skip, len(groups)):]
	if len(groups) > limit+1 {
		groups = groups[:limit+1]
	}
	out := make([]any, 0, len(groups))
	for _, b := range groups {
		g := map[string]any{"key": b.key}
		if b.hasValue {
			g["value"] = b.value
		}
		out = append(out, g)
	}
	res := &GroupsResult{ClassName: sch.ClassName, Field: args.Field, Interval: interval, Timezone: tz, Operation: op, Sort: sortBy}
	res.setRows(out, groupByDateName, groupNext(sch.ClassName, params, args.Where), limit, args.Skip)
	return res, nil
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	}
	return 0, false
}

// bucketKey formats a group key: 2025, 2025-Q1, 2025-03, 2025-W11,
// 2025-03-14, 2025-03-14 09:00, 2025-03-14 09:05, 2025-03-14 09:05:07.
func bucketKey(interval string, k map[string]any) (string, bool) {
	get := func(name string) (int, bool) {
		f, ok := number(k[name])
		return int(f), ok
	}
	y, ok := get("y")
	if !ok {
		return "", false
	}
	m, _ := get("m")
	switch interval {
	case "year":
		return fmt.Sprintf("%04d", y), true
	case "quarter":
		return fmt.Sprintf("%04d-Q%d", y, (m-1)/3+1), true
	case "month":
		return fmt.Sprintf("%04d-%02d", y, m), true
	case "week":
		w, _ := get("w")
		return fmt.Sprintf("%04d-W%02d", y, w), true
	case "day":
		d, _ := get("d")
		return fmt.Sprintf("%04d-%02d-%02d", y, m, d), true
	}
	d, _ := get("d")
	h, _ := get("h")
	i, _ := get("i")
	switch interval {
	case "minute":
		return fmt.Sprintf("%04d-%02d-%02d %02d:%02d", y, m, d, h, i), true
	case "second":
		sec, _ := get("s")
		return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", y, m, d, h, i, sec), true
	}
	return fmt.Sprintf("%04d-%02d-%02d %02d:00", y, m, d, h), true
}
