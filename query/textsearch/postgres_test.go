package textsearch_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/query/textsearch"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// corpus is every String value of the demo data (the data the
// differential suite searches) and texts with the tokens the package
// doc lists.
func corpus(t *testing.T) []string {
	ctx := context.Background()
	st, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "demo.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := demo.Generate(ctx, st, demo.Options{Rows: 600}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	texts := []string{
		"Add two-factor authentication to the Login page; v1 endpoints return a 500 error.",
		"sign-on e-mail foo@bar.com x.com 1.5 1.2.3 can't -5 12-34 covid-19 Heavy-Duty drag-and-drop",
		"Running shoes run fast; the runner runs. Slow slow slow, loads of load",
		"Crème brûlée naïve café ÉCOLE", "UPPER lower MiXeD", "a_b snake_case CamelCase",
		"", "   ", "the and of", "Is there a limit on webhooks?",
	}
	texts = append(texts, longTexts()...)
	for _, c := range []string{demo.ClassTicket, demo.ClassComment, demo.ClassProduct, demo.ClassProject, demo.ClassOrder, demo.ClassCustomer} {
		sch, err := st.Schema(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := st.Find(ctx, &query.Query{Class: c, Limit: -1, ReadACL: query.NoACLFilter})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			for name, f := range sch.Fields {
				if s, ok := r[name].(string); ok && f.Type == "String" && !seen[s] {
					seen[s] = true
					texts = append(texts, s)
				}
			}
		}
	}
	return texts
}

// longTexts are the security review's texts, at PostgreSQL's limits: a
// word repeated past the 255 positions a lexeme keeps, past the last
// position (16,383), distinct words piled on the last position, words of
// 2,047 and 2,048 bytes (the longest PostgreSQL indexes, and one it skips).
func longTexts() []string {
	return []string{
		strings.Repeat("apple ", 300) + "zzz",
		strings.Repeat("apple ", 8000) + "zzz",
		strings.Repeat("Apple pie. ", 400) + "zzz apple",
		strings.Repeat("lorem ", 16383) + numbered("ab", 20000) + " zzz",
		numbered("ab", 20000) + " zzz",
		numbered("ab", 3000) + " " + numbered("cd", 3000),
		"a " + strings.Repeat("x", 2047) + " b",
		"a " + strings.Repeat("x", 2048) + " b zzz",
		"a " + strings.Repeat("x", 3000) + "-y b",
	}
}

// numbered is n words: prefix0 prefix1 …
func numbered(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s%d", prefix, i)
	}
	return b.String()
}

func pgConn(t *testing.T) *pgx.Conn {
	conn, err := pgx.Connect(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestVectorsAgreeWithPostgres: to_tsvector of every corpus text, in
// both configurations, is PostgreSQL's.
func TestVectorsAgreeWithPostgres(t *testing.T) {
	texts := corpus(t)
	conn := pgConn(t)
	ctx := context.Background()
	for _, lang := range textsearch.Languages {
		rows, err := conn.Query(ctx, `SELECT i, v.lexeme, v.positions FROM unnest($2::text[]) WITH ORDINALITY AS x(t, i), unnest(to_tsvector($1::regconfig, t)) AS v`, lang, texts)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]textsearch.Vector, len(texts))
		for rows.Next() {
			var i int
			var lex string
			var pos []int16
			if err := rows.Scan(&i, &lex, &pos); err != nil {
				t.Fatal(err)
			}
			if want[i-1] == nil {
				want[i-1] = textsearch.Vector{}
			}
			for _, p := range pos {
				want[i-1][lex] = append(want[i-1][lex], int(p))
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, text := range texts {
			got := textsearch.NewVector(lang, text)
			if !sameVector(got, want[i]) && bad < 10 {
				bad++
				t.Errorf("%s %q:\n got  %v\n want %v", lang, text, got, want[i])
			}
		}
	}
}

func sameVector(a, b textsearch.Vector) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w := slices.Clone(b[k])
		sort.Ints(w)
		if !slices.Equal(v, w) {
			return false
		}
	}
	return true
}

// searchTerms are to_tsquery terms the differential checks: words,
// stems, operators, phrases, prefixes, weights, stop words.
var searchTerms = []string{
	"slow", "crashes", "crash", "running", "runs", "customer", "customers", "Customer", "report",
	"slow & load", "slow | crash", "slow & !load", "!slow", "login <-> page", "page <-> login",
	"login <2> slow", "'login page'", "'slow to load'", "slow <3> load", "two-factor", "sign-on", "v1",
	"500", "error & (crash | 500)", "(login | checkout) & !slow", "authent:*", "stag:*", "cust:* & report:*",
	"slow:A", "slow:D", "slow:*AD", "the", "the & slow", "slow & the", "the <-> slow", "slow <-> the <-> load",
	"'the login'", "nothing", "zzz | slow", "!(slow | crash)", "heavy-duty", "drag-and-drop", "email",
	"upgrade <-> dependencies", "finance & ledger", "time <-> out", "release <-> so", "v1 <-> endpoint",
	"!slow <-> load", "slow <-> !load", "(slow | fast) <-> load", "(a & slow) <-> load",
	// the review's: long texts (longTexts)
	"appl <-> zzz", "appl & zzz", "zzz <-> appl", "appl <-> pie", "ab:* & zzz", "ab:* <-> zzz", "zzz <-> ab:*",
	"(zzz <-> ab:*) & !qqq", "ab:* <-> cd:*", "ab:* & !cd:*", "a <-> b", "lorem <-> ab:*",
}

// TestQueriesAgreeWithPostgres: for every term, to_tsquery's text, and
// for every corpus text @@ and ts_rank_cd(…, 32), are PostgreSQL's.
func TestQueriesAgreeWithPostgres(t *testing.T) {
	texts := corpus(t)
	conn := pgConn(t)
	ctx := context.Background()
	for _, lang := range textsearch.Languages {
		vectors := make([]textsearch.Vector, len(texts))
		for i, text := range texts {
			vectors[i] = textsearch.NewVector(lang, text)
		}
		for _, term := range searchTerms {
			q, err := textsearch.Parse(lang, term)
			if err != nil {
				t.Errorf("%s %q: %v", lang, term, err)
				continue
			}
			var pgText string
			if err := conn.QueryRow(ctx, `SELECT to_tsquery($1::regconfig, $2)::text`, lang, term).Scan(&pgText); err != nil {
				t.Fatal(err)
			}
			if q.String() != pgText {
				t.Errorf("%s to_tsquery(%q) = %s, PostgreSQL %s", lang, term, q, pgText)
			}
			rows, err := conn.Query(ctx, `SELECT i, to_tsvector($1::regconfig, t) @@ to_tsquery($1::regconfig, $2), ts_rank_cd(to_tsvector($1::regconfig, t), to_tsquery($1::regconfig, $2), 32) FROM unnest($3::text[]) WITH ORDINALITY AS x(t, i)`, lang, term, texts)
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for rows.Next() {
				var i int
				var match bool
				var rank float32
				if err := rows.Scan(&i, &match, &rank); err != nil {
					t.Fatal(err)
				}
				v := vectors[i-1]
				if got, gotRank := q.Match(v), q.Rank(v); (got != match || gotRank != rank) && bad < 5 {
					bad++
					t.Errorf("%s %q @@ %q = %v rank %v, PostgreSQL %v rank %v", lang, texts[i-1], term, got, gotRank, match, rank)
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSyntaxErrorsAgreeWithPostgres: a term PostgreSQL refuses is
// refused, and one it accepts is accepted.
func TestSyntaxErrorsAgreeWithPostgres(t *testing.T) {
	conn := pgConn(t)
	ctx := context.Background()
	for _, term := range []string{
		"slow load", "slow &", "& slow", "(slow", "slow)", "slow <- load", "slow <x> load", "slow <99999> load",
		"!", "()", "slow & & load", "'unterminated", "slow:", ":slow", "a | | b", "slow <0> load", "  ", "slow !load",
		`sl\ow`, "slow&load", "slow<->load", "!!slow", "slow:*:*", "slow ( load )",
	} {
		_, err := textsearch.Parse("english", term)
		_, pgErr := conn.Exec(ctx, `SELECT to_tsquery('english', $1)`, term)
		if (err != nil) != (pgErr != nil) {
			t.Errorf("%q: ours %v, PostgreSQL %v", term, err, pgErr)
		}
	}
}

// TestTooLongAgreesWithPostgres: to_tsvector refuses the texts whose
// lexemes and positions take more than 1 MB, with the same size, and
// makes the others.
func TestTooLongAgreesWithPostgres(t *testing.T) {
	conn := pgConn(t)
	ctx := context.Background()
	words := func(format string, n, times int) string {
		var b strings.Builder
		for i := range n {
			for range times {
				fmt.Fprintf(&b, format+" ", i)
			}
		}
		return b.String()
	}
	for _, c := range []struct {
		name string
		text string
	}{
		{"87381 words of 8 bytes", words("w%07d", 87381, 1)}, // 12 bytes each: 1,048,572
		{"87382 words of 8 bytes", words("w%07d", 87382, 1)},
		{"74898 words of 9 bytes", words("v%08d", 74898, 1)}, // 9, 1 to align, 2 + 2: 14 bytes each
		{"74899 words of 9 bytes", words("v%08d", 74899, 1)},
		{"74898 words of 8 bytes twice", words("u%07d", 74898, 2)}, // 8 + 2 + 2·2
		{"74899 words of 8 bytes twice", words("u%07d", 74899, 2)},
	} {
		_, err := textsearch.Vectorize("simple", c.text)
		var n int
		pgErr := conn.QueryRow(ctx, `SELECT length(to_tsvector('simple', $1))`, c.text).Scan(&n)
		var pe *pgconn.PgError
		switch {
		case err == nil && pgErr == nil:
		case err != nil && errors.As(pgErr, &pe):
			if err.Error() != pe.Message {
				t.Errorf("%s: %v, PostgreSQL %v", c.name, err, pe.Message)
			}
		default:
			t.Errorf("%s: %v, PostgreSQL %v", c.name, err, pgErr)
		}
	}
}
