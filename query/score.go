package query

// A $text search ranks the rows it matches, as Parse Server does on
// PostgreSQL with ts_rank_cd(to_tsvector(lang, field), to_tsquery(lang,
// term), 32): `order: "$score"` sorts by that rank (highest first, whether
// written "$score" or "-$score"), and `keys: ["$score"]` returns it as the
// row's "score".
const (
	// ScoreKey names the rank in an order or a keys list.
	ScoreKey = "$score"
	// ScoreField is the rank's name in a returned row.
	ScoreField = "score"
)

// WantsScore reports whether q returns the rank (its keys name $score).
func (q *Query) WantsScore() bool {
	for _, k := range q.Keys {
		if k == ScoreKey {
			return true
		}
	}
	return false
}

// UsesScore reports whether q orders by or returns the rank.
func (q *Query) UsesScore() bool {
	if q.WantsScore() {
		return true
	}
	for _, k := range q.Order {
		if k.Field == ScoreKey {
			return true
		}
	}
	return false
}

// ScoreText returns the $text constraint q's rank is computed for: q.Rank
// when set, else the one $text that every row of q must satisfy (at the
// top of the where, or in an $and there). ok is false when q does not use
// the rank.
func ScoreText(q *Query) (t Text, ok bool, err error) {
	if !q.UsesScore() {
		return Text{}, false, nil
	}
	if q.Rank != nil {
		return *q.Rank, true, nil
	}
	var found []Text
	var visit func(e Expr)
	visit = func(e Expr) {
		switch x := e.(type) {
		case Text:
			found = append(found, x)
		case And:
			for _, s := range x.Exprs {
				visit(s)
			}
		}
	}
	visit(q.Where)
	switch len(found) {
	case 0:
		return Text{}, false, errAt("order", "%s needs a $text constraint at the top of the where (not under $or or $nor) to rank by", ScoreKey)
	case 1:
		return found[0], true, nil
	}
	return Text{}, false, errAt("where", "%s ranks by one $text constraint; the where has %d (keep one, or AND the others' words into its $term)", ScoreKey, len(found))
}

// RankFor returns q's rank text when q uses the rank, resolved from q's
// own where: whoever ANDs more constraints into a caller's where (the
// governed scope: filters, tenant, canonical filter) sets Query.Rank to
// it first, so that a $text of theirs, perhaps on a field the caller may
// not see, is never what the caller's rank measures.
func RankFor(q *Query) (*Text, error) {
	t, ok, err := ScoreText(q)
	if !ok || err != nil {
		return nil, err
	}
	return &t, nil
}

// CheckScore refuses a query that orders by or returns $score without
// the one $text constraint the rank is computed for.
func CheckScore(q *Query) error {
	_, _, err := ScoreText(q)
	return err
}

// scoreOrderKey is the order key "$score" and "-$score" stand for.
func scoreOrderKey(part string) (OrderKey, bool) {
	if part == ScoreKey || part == "-"+ScoreKey {
		return OrderKey{Field: ScoreKey, Desc: true}, true
	}
	return OrderKey{}, false
}
