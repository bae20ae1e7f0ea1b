package llm

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Price is a model's list price in US dollars per million tokens.
type Price struct {
	Input  float64 `json:"input" yaml:"input"`
	Output float64 `json:"output" yaml:"output"`
}

// Pricing maps a model name to its price. A model is priced by its exact
// name, else by the longest name in the table that begins it (so
// "gpt-4o-mini-2024-07-18" takes the price of "gpt-4o-mini").
type Pricing map[string]Price

// DefaultPricing holds list prices of common models (USD per million
// tokens) as published by their vendors; override or extend it with
// Config.Pricing (flag --price, env PARSEMCP_LLM_PRICES). Local models are
// free and absent.
var DefaultPricing = Pricing{
	"gpt-4o-mini":       {Input: 0.15, Output: 0.60},
	"gpt-4o":            {Input: 2.50, Output: 10.00},
	"gpt-4.1":           {Input: 2.00, Output: 8.00},
	"gpt-4.1-mini":      {Input: 0.40, Output: 1.60},
	"gpt-4.1-nano":      {Input: 0.10, Output: 0.40},
	"gpt-5":             {Input: 1.25, Output: 10.00},
	"gpt-5-mini":        {Input: 0.25, Output: 2.00},
	"gpt-5-nano":        {Input: 0.05, Output: 0.40},
	"o4-mini":           {Input: 1.10, Output: 4.40},
	"claude-haiku-4-5":  {Input: 1.00, Output: 5.00},
	"claude-sonnet-4-5": {Input: 3.00, Output: 15.00},
	"claude-sonnet-4":   {Input: 3.00, Output: 15.00},
	"claude-opus-4-1":   {Input: 15.00, Output: 75.00},
	"claude-opus-4-5":   {Input: 5.00, Output: 25.00},
	"claude-3-5-haiku":  {Input: 0.80, Output: 4.00},
}

// Lookup returns the price of model and whether the table has one.
func (p Pricing) Lookup(model string) (Price, bool) {
	if pr, ok := p[model]; ok {
		return pr, true
	}
	best := ""
	for name := range p {
		if strings.HasPrefix(model, name) && len(name) > len(best) {
			best = name
		}
	}
	if best == "" {
		return Price{}, false
	}
	return p[best], true
}

// Cost is the estimated price of t tokens of model, in US dollars (0 when
// the model has no price).
func (p Pricing) Cost(model string, t Tokens) float64 {
	pr, _ := p.Lookup(model)
	return (float64(t.Input)*pr.Input + float64(t.Output)*pr.Output) / 1e6
}

// With returns a copy of p with q's entries added or replacing p's.
func (p Pricing) With(q Pricing) Pricing {
	out := make(Pricing, len(p)+len(q))
	for k, v := range p {
		out[k] = v
	}
	for k, v := range q {
		out[k] = v
	}
	return out
}

// ParsePrices reads "MODEL=IN/OUT" entries (USD per million input and
// output tokens), separated by commas, e.g.
// "gpt-4o-mini=0.15/0.60,my-model=0/0".
func ParsePrices(spec string) (Pricing, error) {
	out := Pricing{}
	for _, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		model, prices, ok := strings.Cut(entry, "=")
		in, outp, ok2 := strings.Cut(prices, "/")
		if !ok || !ok2 || strings.TrimSpace(model) == "" {
			return nil, fmt.Errorf("price %q: want MODEL=INPUT/OUTPUT in USD per million tokens, e.g. gpt-4o-mini=0.15/0.60", entry)
		}
		i, err1 := strconv.ParseFloat(strings.TrimSpace(in), 64)
		o, err2 := strconv.ParseFloat(strings.TrimSpace(outp), 64)
		if err1 != nil || err2 != nil || i < 0 || o < 0 {
			return nil, fmt.Errorf("price %q: prices must be non-negative numbers", entry)
		}
		out[strings.TrimSpace(model)] = Price{Input: i, Output: o}
	}
	return out, nil
}

// String lists the table, sorted by model, in the form ParsePrices reads.
func (p Pricing) String() string {
	names := make([]string, 0, len(p))
	for n := range p {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%g/%g", n, p[n].Input, p[n].Output)
	}
	return strings.Join(parts, ",")
}

// Usage is the tokens and estimated cost of one or more model turns.
type Usage struct {
	Tokens
	TotalTokens int64 `json:"total_tokens"`
	// CostUSD is the estimated price of the tokens, when Priced.
	CostUSD float64 `json:"cost_usd"`
	// Priced says the model has a price (Pricing): without one there is
	// no cost, and cost_usd is left out of the JSON rather than shown as 0.
	Priced bool `json:"-"`
	// Turns is how many model requests the usage covers.
	Turns int `json:"turns"`
}

// usageOf prices one turn's tokens.
func usageOf(p Pricing, model string, t Tokens) Usage {
	_, priced := p.Lookup(model)
	return Usage{Tokens: t, TotalTokens: t.Total(), CostUSD: p.Cost(model, t), Priced: priced, Turns: 1}
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{Tokens: u.Tokens.Add(v.Tokens), TotalTokens: u.TotalTokens + v.TotalTokens, CostUSD: u.CostUSD + v.CostUSD,
		Priced: u.Priced || v.Priced, Turns: u.Turns + v.Turns}
}

// MarshalJSON leaves cost_usd out of an unpriced usage.
func (u Usage) MarshalJSON() ([]byte, error) {
	type plain Usage
	if u.Priced {
		return json.Marshal(plain(u))
	}
	return json.Marshal(struct {
		plain
		CostUSD *float64 `json:"cost_usd,omitempty"` // shadows plain's
	}{plain: plain(u)})
}

// String is the usage as a person reads it: "84 in + 120 out = 204 tokens
// $0.000101", without the cost when the model has no price.
func (u Usage) String() string {
	s := fmt.Sprintf("%d in + %d out = %d tokens", u.Input, u.Output, u.TotalTokens)
	if u.Priced {
		s += " $" + formatUSD(u.CostUSD)
	}
	return s
}

func formatUSD(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v >= 0.01:
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}
