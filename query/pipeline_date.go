package query

import (
	"regexp"
	"strings"
	"time"

	"github.com/parsemcp/parsemcp/parse"
)

// Date operators ($year, $month, …) and their timezone option.

// DateOperators are the date-part operators an Operand may apply, with
// what each returns.
var DateOperators = map[string]string{
	"$year":         "the year",
	"$month":        "the month, 1-12",
	"$dayOfMonth":   "the day of the month, 1-31",
	"$dayOfWeek":    "the day of the week, 1 (Sunday) - 7 (Saturday)",
	"$dayOfYear":    "the day of the year, 1-366",
	"$hour":         "the hour, 0-23",
	"$minute":       "the minute, 0-59",
	"$second":       "the second, 0-59",
	"$millisecond":  "the millisecond, 0-999",
	"$week":         "the week of the year, 0-53 (weeks start on Sunday; days before the first Sunday are week 0)",
	"$isoWeek":      "the ISO 8601 week, 1-53",
	"$isoWeekYear":  "the ISO 8601 week-numbering year",
	"$isoDayOfWeek": "the ISO day of the week, 1 (Monday) - 7 (Sunday)",
}

var tzOffsetRE = regexp.MustCompile(`^([+-])(0\d|1[0-4]):?([0-5]\d)$`)

// timeZone validates a timezone option: UTC, an IANA name or ±hh:mm.
func timeZone(v any, at string) (string, bool, error) {
	tz, _ := v.(string)
	switch tz {
	case "UTC", "Z", "+00:00", "+0000", "Etc/UTC", "GMT":
		return "", false, nil
	}
	if m := tzOffsetRE.FindStringSubmatch(tz); m != nil {
		return m[1] + m[2] + ":" + m[3], true, nil
	}
	if tz == "" || strings.EqualFold(tz, "Local") || len(tz) > 64 {
		return "", false, errAt(at, "expected an IANA time zone such as Europe/Paris or an offset such as +05:30, got %s", describeAny(v))
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return "", false, errAt(at, "unknown time zone %q", tz)
	}
	return tz, false, nil
}

func (p *pipeParser) datePart(op string, arg any, at string) (Operand, error) {
	var tz string
	var tzOffset bool
	date := arg
	if keys, m, ok := asObject(arg); ok && len(keys) > 0 && !strings.HasPrefix(keys[0], "$") {
		date = m["date"]
		for _, k := range keys {
			switch k {
			case "date":
			case "timezone":
				var err error
				if tz, tzOffset, err = timeZone(m[k], at+".timezone"); err != nil {
					return Operand{}, err
				}
			default:
				return Operand{}, errAt(at+"."+k, "unknown option %q (use date and timezone)", k)
			}
		}
		if date == nil {
			return Operand{}, errAt(at, "needs a date: {\"date\": \"$field\"}")
		}
	}
	if arr, ok := date.([]any); ok && len(arr) == 1 {
		date = arr[0]
	}
	a, err := p.operand(date, at, false)
	if err != nil {
		return Operand{}, err
	}
	if a.Type.Kind != parse.TypeDate {
		return Operand{}, errAt(at, "%s takes a Date, got a %s value", op, a.Type.Kind)
	}
	return Operand{Op: op, Arg: &a, TZ: tz, TZOffset: tzOffset, Type: Type{Kind: parse.TypeNumber}}, nil
}
