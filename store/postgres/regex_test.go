package postgres_test

import (
	"context"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// regexSubjects are the texts every pattern runs on: newlines where the
// engines' line modes differ, letters and digits beyond ASCII, characters
// whose case folding goes beyond ASCII, and ARE's and RE2's operators as
// text.
var regexSubjects = []string{
	"", "a", "A", "ab", "abc", "aaa", "ba", "alpha", "Alpha", "ALPHA", "alphabet",
	"one\ntwo", "one\ntwo\nthree", "two\n", "\ntwo", "\n", "\n\n", "x\r\ny", "tab\there",
	"gamma ray", "a_b", "a-b", "a.b", "a b", "ab1", "1ab", "123", "١٢٣", "１２３",
	"Δelta", "δέλτα", "ΣΊΣΥΦΟΣ", "σίσυφος", "ς", "\u212aelvin", "kelvin", "KELVIN", "ſ", "S", "s",
	"naïve café", "NAÏVE", "ǅ", "ǆ", "Ǆ", "ß", "ẞ", "İ", "i", "ı",
	`a\b`, "(c)", "[d]", "{e}", "x*y+z?^$|.", "\u00a0", "\u2028", "é", "e\u0301", "😀", "a😀b",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
}

// regexPatterns are written by hand; random ones follow.
var regexPatterns = []string{
	"a", "^a", "a$", "^$", "^", "$", "", ".", "^.$", "^..$", "^.*$", "^[^x]*$", "[^a]",
	`\b`, `\B`, `\ba`, `a\b`, `\bray\b`, `^\w+$`, `\W`, `\d`, `\D`, `\s`, `\S`, `^\s*$`,
	`[[:alpha:]]`, `[[:^alpha:]]`, `[[:upper:]]`, `[[:word:]]+`, `[[:punct:]]`, `[[:space:]]`,
	`\pL`, `\PL`, `\pN`, `\p{Greek}`, `\p{Lu}`, `[\p{Greek}\d]`, `[^\pL]`,
	`\Qa.b\E`, `\Q(c)\E`, `\x41`, `\x{394}`, `\x{1F600}`, `\n`, `\t`, `\r\n`, `\v`, `\f`, `\a`,
	`\A`, `\z`, `\Aone`, `two\z`, `(?m)^two$`, `(?m)^$`, `(?m)$`, `(?s).`, `(?s)^.*$`, `(?ms)^.$`,
	`(?i)k`, `(?i)s`, `(?i)σ`, `(?i)ΣΊΣΥΦΟΣ`, `(?i)[a-z]+`, `(?i)[^a-z]`, `(?i)ǆ`, `(?i)ß`, `(?i)i`, `(?i)[[:upper:]]`, `(?i)\pL`,
	`(?i:A)lpha`, `(?U)a+`, `a+?`, `a*?b`, `(?P<x>a)b`, `(a)(b)`, `(a|)`, `(|a)b`, `a|b|`, `(?:)`, `()`, `(?:a|b)*c`,
	`a{2}`, `a{2,}`, `a{0,2}`, `^a{3}$`, `^a{255}`, `^a{256}`, `^a{300,}$`, `^a{250,260}$`, `^(?:a{2}){150}$`, `^(?:aa){0,100}$`, `a{1000}`, `^(?:a|b){3,1000}$`, `(?i)^[a-zé]{2,600}`,
	`[\]\[]`, `[a\-z]`, `[-a]`, `[a-]`, `[.]`, `[\\]`, `[\^]`, `[^\n]`, `[\x00-\x{10FFFF}]`, `[^\x00-\x{10FFFF}]`, `x|[^\x00-\x{10FFFF}]`,
	`(?:^)*a`, `(?:\b)+a`, `(?:$)?`, `(?m)(?:^a|b$)`, `\bé`, `é\b`, `😀`, `^.{3}$`, `a.b`, `\.`, `\$`, `\^`, `\|`, `\*`, `\{e\}`,
}

func randomPattern(r *rand.Rand, depth int) string {
	atoms := []string{"a", "b", "A", "k", "s", ".", `\w`, `\W`, `\d`, `\s`, `\S`, `\b`, `\B`, "^", "$", `\n`, "[^a]", "[a-c]", "[[:alpha:]]",
		`\pL`, `\pN`, "é", "Σ", "σ", " ", "_", "-", `\.`, `\A`, `\z`, "x", "1", "١", `\x{212a}`}
	if depth > 2 || r.IntN(3) == 0 {
		return atoms[r.IntN(len(atoms))]
	}
	switch r.IntN(8) {
	case 0:
		return randomPattern(r, depth+1) + "|" + randomPattern(r, depth+1)
	case 1:
		return "(" + randomPattern(r, depth+1) + ")*"
	case 2:
		return "(?:" + randomPattern(r, depth+1) + ")+"
	case 3:
		return "(" + randomPattern(r, depth+1) + ")?"
	case 4:
		return "(?i:" + randomPattern(r, depth+1) + ")"
	case 5:
		return "(?:" + randomPattern(r, depth+1) + "){1,3}"
	}
	return randomPattern(r, depth+1) + randomPattern(r, depth+1)
}

// TestRegexAgreesWithGo: every pattern, under every combination of
// $options, selects on PostgreSQL exactly the subjects Go's regexp
// matches.
func TestRegexAgreesWithGo(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	patterns := slices.Clone(regexPatterns)
	r := rand.New(rand.NewPCG(3, 5))
	for range 600 {
		patterns = append(patterns, randomPattern(r, 0))
	}
	var flagSets []query.RegexFlags
	for i := range 8 {
		flagSets = append(flagSets, query.RegexFlags{CaseInsensitive: i&1 != 0, Multiline: i&2 != 0, DotAll: i&4 != 0})
	}
	checked := 0
	for _, pat := range patterns {
		for _, f := range flagSets {
			re, err := regexp.Compile(query.GoRegexPrefix(f) + pat)
			if err != nil {
				continue // the where parser refuses it
			}
			var want []int32
			for i, s := range regexSubjects {
				if re.MatchString(s) {
					want = append(want, int32(i))
				}
			}
			are := postgres.ArePattern(pat, f)
			var got []int32
			err = conn.QueryRow(ctx, `SELECT coalesce(array_agg(i - 1 ORDER BY i), '{}') FROM unnest($2::text[]) WITH ORDINALITY AS t(s, i) WHERE s ~ $1`,
				are, regexSubjects).Scan(&got)
			if err != nil {
				t.Errorf("%q %+v as %q: %v", pat, f, are, err)
				continue
			}
			if !slices.Equal(got, want) {
				t.Errorf("%q %+v as %q:\n  PostgreSQL matches %q\n  Go matches         %q", pat, f, are, pick(got), pick(want))
			}
			checked++
		}
	}
	t.Logf("%d patterns and flag sets agree on %d subjects", checked, len(regexSubjects))
}

func pick(idx []int32) string {
	var out []string
	for _, i := range idx {
		out = append(out, regexSubjects[i])
	}
	return strings.Join(out, " | ")
}
