package query

import (
	"math"
	"slices"
)

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

// WithLimit returns a copy of p that keeps its first n rows, as if its
// stages had ended with {"$limit": n}: the stage the parser makes for that
// is appended (to Raw too, as the decoder reads it), without parsing p
// again. The aggregate tool bounds a pipeline its caller left unbounded
// with it. n must be one the parser admits (1 to the largest $limit).
func (p *Pipeline) WithLimit(n int) *Pipeline {
	c := *p
	c.Stages = append(slices.Clip(p.Stages), &LimitStage{stageOut: stageOut{p.Output}, N: n})
	c.Raw = append(slices.Clip(p.Raw), &OrderedObject{Keys: []string{"$limit"}, Values: map[string]any{"$limit": float64(n)}})
	c.HasLimit = true
	return &c
}
