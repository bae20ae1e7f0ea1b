package query

import "math"

// $limit and $skip: the first rows kept or dropped.

// LimitStage keeps the first N rows.
type LimitStage struct {
	stageOut
	N int
}

// SkipStage drops the first N rows.
type SkipStage struct {
	stageOut
	N int
}

func (LimitStage) Name() string { return "$limit" }
func (SkipStage) Name() string  { return "$skip" }

func intArg(v any, at string, min int) (int, error) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || f < float64(min) || f > maxLimit {
		return 0, errAt(at, "takes an integer from %d to %d, got %s", min, maxLimit, describeAny(v))
	}
	return int(f), nil
}
