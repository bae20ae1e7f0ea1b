package agent

import (
	"slices"
	"sort"
)

// Lineage says where a stands in its call tree: its depth (0 for a
// top-level agent, one more per sub-agent level) and its parent's id (""
// for a top-level agent).
func (a *Agent) Lineage() (depth int, parentID string) {
	if a.parent != nil {
		parentID = a.parent.ID
	}
	for p := a.parent; p != nil; p = p.parent {
		depth++
	}
	return depth, parentID
}

// FilterFields maps each class an agent's filters constrain (or
// DefaultFilterKey) to the names of the fields they constrain, across
// every layer, sorted; never the values, which may identify a user. Nil
// when the agent has no filters.
func (p Policy) FilterFields() map[string][]string {
	var out map[string][]string
	for _, layer := range p.Filters {
		for class, where := range layer {
			for field := range where {
				if out == nil {
					out = map[string][]string{}
				}
				if !slices.Contains(out[class], field) {
					out[class] = append(out[class], field)
				}
			}
		}
	}
	for _, fields := range out {
		sort.Strings(fields)
	}
	return out
}
