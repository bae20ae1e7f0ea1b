package query

import (
	"strings"

	"github.com/parsemcp/parsemcp/parse"
)

// $replaceRoot and $replaceWith: an object value becomes the whole row.

// ReplaceRootStage replaces each row with an object: an Object value whose
// fields are known here (a composite $group key, a $lookup'd or
// $graphLookup'd object after $unwind, an element of a $facet result), or
// an object of expressions. A row whose Root value is missing is dropped
// (MongoDB fails the whole aggregation instead).
type ReplaceRootStage struct {
	stageOut
	Op string // "$replaceRoot" or "$replaceWith"
	// Root is the replaced-with value; nil for an object of expressions.
	Root   *Operand
	Fields []ProjectField
}

// Name is "$replaceRoot" or "$replaceWith", as written.
func (s ReplaceRootStage) Name() string { return s.Op }

func (p *pipeParser) replaceRoot(op string, arg any, at string) (Stage, error) {
	v, vat := arg, at
	if op == "$replaceRoot" {
		keys, m, ok := asObject(arg)
		if !ok || len(keys) != 1 || keys[0] != "newRoot" {
			return nil, errAt(at, `takes {"newRoot": <"$field" or an object of expressions>}, got %s`, describeAny(arg))
		}
		v, vat = m["newRoot"], at+".newRoot"
	}
	st := &ReplaceRootStage{Op: op}
	keys, m, isObj := asObject(v)
	if isObj && len(keys) > 0 && !strings.HasPrefix(keys[0], "$") && parse.TypeOf(plain(v)) == "" {
		// An object of expressions: each key a field of the new row.
		if len(keys) > maxStageFields {
			return nil, errAt(vat, "at most %d fields", maxStageFields)
		}
		seen := map[string]bool{}
		for _, k := range keys {
			kat := vat + "." + k
			name, err := outName(k, kat)
			if err != nil {
				return nil, err
			}
			if seen[name] {
				return nil, errAt(kat, "%s is given twice (_id and objectId name the same field)", name)
			}
			seen[name] = true
			val, err := p.operand(m[k], kat, true)
			if err != nil {
				return nil, err
			}
			st.Fields = append(st.Fields, computed(name, val))
		}
	} else {
		root, err := p.operand(v, vat, false)
		if err != nil {
			return nil, err
		}
		if root.Op != "" || root.Type.Kind != parse.TypeObject || (root.Type.Fields == nil && root.Type.Class == nil) {
			return nil, errAt(vat, "%s is a %s value whose fields are not known here: the new row must be an object with known fields "+
				"(a composite $group key, an object from $lookup or $graphLookup after $unwind, a $facet element), "+
				"or list the fields: {\"newRoot\": {\"a\": \"$obj.a\", \"b\": \"$obj.b\"}}", describeOperand(root), root.Type.Kind)
		}
		path := "$" + strings.Join(append([]string{root.Ref}, root.Sub...), ".")
		var names []Field
		if root.Type.Fields != nil {
			names = root.Type.Fields
		} else {
			names = ClassFields(*root.Type.Class)
		}
		for _, f := range names {
			op, err := p.ref(path+"."+f.Name, vat)
			if err != nil {
				return nil, err
			}
			st.Fields = append(st.Fields, ProjectField{Field: Field{Name: f.Name, Type: op.Type, System: f.System, KeepNull: f.KeepNull}, Value: op})
		}
		st.Root = &root
	}
	st.fields = projectOut(st.Fields)
	p.base = false
	p.classRows = false
	return st, nil
}
