package query

import (
	"fmt"

	"github.com/parsemcp/parsemcp/parse"
)

// $facet and $unionWith: stages holding pipelines of their own.

const (
	// MaxFacets bounds the sub-pipelines of one $facet.
	MaxFacets = 10
	// maxTotalStages bounds the stages of a pipeline with its
	// sub-pipelines.
	maxTotalStages = 60
	// maxNesting bounds how deep sub-pipelines nest.
	maxNesting = 3
)

// FacetStage runs each facet's pipeline on the rows entering the stage and
// outputs one row holding, per facet, the Array of that pipeline's rows.
type FacetStage struct {
	stageOut
	Facets []Facet
}

// Facet is one named sub-pipeline of a $facet. Its Pipeline's Input are
// the fields entering the $facet; its Filter is unused (the rows are the
// ones entering the stage).
type Facet struct {
	Name     string
	Pipeline *Pipeline
}

// UnionWithStage appends to the rows the result of Pipeline, a pipeline on
// another class (or the same one), in its order. A field both sides have
// has one type on both.
type UnionWithStage struct {
	stageOut
	Pipeline *Pipeline
}

func (FacetStage) Name() string     { return "$facet" }
func (UnionWithStage) Name() string { return "$unionWith" }

// child returns a parser for a sub-pipeline on rows of shape from class s.
func (p *pipeParser) child(s parse.Schema, shape []Field, base, classRows bool, at string) (*pipeParser, error) {
	if p.nested >= maxNesting {
		return nil, errAt(at, "sub-pipelines nest at most %d deep", maxNesting)
	}
	return &pipeParser{schema: s, resolve: p.resolve, shape: shape, base: base, classRows: classRows, total: p.total, nested: p.nested + 1, inFacet: p.inFacet}, nil
}

func (p *pipeParser) facet(arg any, at string) (Stage, error) {
	if p.inFacet {
		return nil, errAt(at, "a $facet cannot hold another $facet")
	}
	keys, m, ok := asObject(arg)
	if !ok || len(keys) == 0 {
		return nil, errAt(at, `takes an object of output fields to pipelines, {"byStatus": [{"$sortByCount": "$status"}], "total": [{"$count": "n"}]}, got %s`, describeAny(arg))
	}
	if len(keys) > MaxFacets {
		return nil, errAt(at, "%d facets: a $facet has at most %d", len(keys), MaxFacets)
	}
	st := &FacetStage{}
	for _, k := range keys {
		kat := at + "." + k
		name, err := outName(k, kat)
		if err != nil {
			return nil, err
		}
		if name == parse.FieldObjectID {
			return nil, errAt(kat, "name the facet otherwise than _id or objectId")
		}
		arr, ok := m[k].([]any)
		if !ok || len(arr) == 0 {
			return nil, errAt(kat, "a facet is a non-empty array of stages, got %s", describeAny(m[k]))
		}
		sub, err := p.child(p.schema, p.shape, p.base, p.classRows, kat)
		if err != nil {
			return nil, err
		}
		sub.inFacet = true
		sp, err := sub.pipeline(arr, kat)
		if err != nil {
			return nil, err
		}
		st.Facets = append(st.Facets, Facet{Name: name, Pipeline: sp})
		elem := Type{Kind: parse.TypeObject, Fields: sp.Output}
		st.fields = append(st.fields, Field{Name: name, Type: Type{Kind: parse.TypeArray, Elem: &elem}})
	}
	p.base = false
	p.classRows = false
	return st, nil
}

// resolveClass resolves a class another class's stage reads (at names the
// option). An invalid name is answered like an unknown or hidden class,
// so the answer does not tell which names could exist.
func (p *pipeParser) resolveClass(name, at string) (parse.Schema, error) {
	if p.resolve == nil {
		return parse.Schema{}, errAt(at, "class %q cannot be read here", name)
	}
	fs, err := p.resolve(name)
	if err == nil && !parse.ValidClassName(name) {
		err = fmt.Errorf("class %q was not found", name)
	}
	if err != nil {
		return parse.Schema{}, &classError{qe: &Error{Path: at, Msg: err.Error()}, cause: err}
	}
	fs.ClassName = name
	return fs, nil
}

func (p *pipeParser) unionWith(arg any, at string) (Stage, error) {
	var (
		coll   = arg
		cat    = at
		stages []any
	)
	if keys, m, ok := asObject(arg); ok {
		coll, cat = m["coll"], at+".coll"
		for _, k := range keys {
			switch k {
			case "coll":
			case "pipeline":
				arr, ok := m[k].([]any)
				if !ok {
					return nil, errAt(at+"."+k, "takes an array of stages, got %s", describeAny(m[k]))
				}
				stages = arr
			default:
				return nil, errAt(at+"."+k, "unknown option %q (use coll and pipeline)", k)
			}
		}
	}
	class, ok := coll.(string)
	if !ok || class == "" {
		return nil, errAt(cat, `takes a class name, or {"coll": <class>, "pipeline": [<stages>]}, got %s`, describeAny(coll))
	}
	fs, err := p.resolveClass(class, cat)
	if err != nil {
		return nil, err
	}
	sub, err := p.child(fs, ClassFields(fs), true, true, at)
	if err != nil {
		return nil, err
	}
	sub.inFacet = false
	sp, err := sub.pipeline(stages, at+".pipeline")
	if err != nil {
		return nil, err
	}
	out := append([]Field(nil), p.shape...)
	for _, f := range sp.Output {
		i := FieldIndex(out, f.Name)
		if i < 0 {
			out = append(out, f)
			continue
		}
		if !sameType(out[i].Type, f.Type) {
			return nil, errAt(at, "field %q is %s in the rows so far and %s in the rows of %s: rename one side with $project", f.Name, describeType(out[i].Type), describeType(f.Type), class)
		}
		out[i].System = out[i].System && f.System
		out[i].KeepNull = out[i].KeepNull || f.KeepNull
	}
	p.base = false
	return &UnionWithStage{stageOut: stageOut{out}, Pipeline: sp}, nil
}

// FieldIndex is the index of the field called name in fields, -1 when
// there is none.
func FieldIndex(fields []Field, name string) int {
	for i, f := range fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// sameType reports whether values of a and b have one SQL form.
func sameType(a, b Type) bool {
	if a.Kind != b.Kind || a.Target != b.Target || a.JSON != b.JSON || (a.Elem == nil) != (b.Elem == nil) || len(a.Fields) != len(b.Fields) || (a.Class == nil) != (b.Class == nil) {
		return false
	}
	if a.Elem != nil && !sameType(*a.Elem, *b.Elem) {
		return false
	}
	if a.Class != nil && a.Class.ClassName != b.Class.ClassName {
		return false
	}
	for i := range a.Fields {
		if a.Fields[i].Name != b.Fields[i].Name || !sameType(a.Fields[i].Type, b.Fields[i].Type) {
			return false
		}
	}
	return true
}

func describeType(t Type) string {
	switch {
	case t.Kind == parse.TypePointer:
		return "a Pointer to " + t.Target
	case t.Class != nil:
		return "an object of " + t.Class.ClassName
	case t.Kind == parse.TypeArray && t.Elem != nil && t.Elem.Class != nil:
		return "an Array of " + t.Elem.Class.ClassName + " objects"
	}
	return "a " + string(t.Kind)
}

// ---------------------------------------------------------------- governance

// Source is one class whose rows a pipeline reads, for the governed scope
// to hold to its rules like a find on that class.
type Source struct {
	Class string
	// Where are the caller's own constraints on those rows (its $match
	// stages, a restrictSearchWithMatch), nil for none.
	Where Expr
	// Filter is where the scope's row rules for the class go (And them
	// in): the Pipeline's, LookupStage's or GraphLookupStage's Filter.
	Filter *Expr
}

// Sources returns every class p reads: p's own class, then each $lookup,
// $graphLookup and $unionWith (its pipeline's own sources in turn), at any
// depth, $facet sub-pipelines included. Its Filters point into p's
// stages: call it on the copy the scope will run (WithFilter).
func (p *Pipeline) Sources() []Source {
	var where []Expr
	if p.Filter != nil {
		where = append(where, p.Filter)
	}
	var joined []Source
	p.walk(func(st Stage) {
		switch x := st.(type) {
		case *MatchStage:
			if x.Where != nil {
				where = append(where, x.Where)
			}
		case *LookupStage:
			joined = append(joined, Source{Class: x.From.ClassName, Filter: &x.Filter})
		case *GraphLookupStage:
			joined = append(joined, Source{Class: x.From.ClassName, Where: x.Restrict, Filter: &x.Filter})
		case *UnionWithStage:
			joined = append(joined, x.Pipeline.Sources()...)
		}
	})
	own := Source{Class: p.Class, Where: AndOf(where...), Filter: &p.Filter}
	return append([]Source{own}, joined...)
}

// walk calls f for each stage of p and of its $facet sub-pipelines (not
// of a $unionWith's pipeline: that one reads another class's rows).
func (p *Pipeline) walk(f func(Stage)) {
	for _, st := range p.Stages {
		f(st)
		if fs, ok := st.(*FacetStage); ok {
			for _, fc := range fs.Facets {
				fc.Pipeline.walk(f)
			}
		}
	}
}
