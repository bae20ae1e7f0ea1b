package query

import (
	"fmt"
	"math"

	"github.com/parsemcp/parsemcp/parse"
)

// The operators that reach into another class, the Relation operators and
// the geo operators.

// subParser returns a parser for another class's where, one level deeper.
func (p *whereParser) sub(class, at string) (*whereParser, parse.Schema, error) {
	if p.lookup == nil {
		return nil, parse.Schema{}, errAt(at, "cross-class operators are not available here")
	}
	s, err := p.lookup(class) // an invalid name is an unknown class
	if err == nil && !parse.ValidClassName(class) {
		err = fmt.Errorf("invalid class name %q", class)
	}
	if err != nil {
		return nil, parse.Schema{}, errAt(at, "%v", err)
	}
	return &whereParser{schema: s, lookup: p.lookup, branches: p.branches, view: p.view}, s, nil
}

// subQuery parses {"className": C, "where": {...}} into a Query on C.
func (p *whereParser) subQuery(v any, at string, depth int) (*Query, parse.Schema, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, parse.Schema{}, errAt(at, `takes {"className": "…", "where": {…}}, got %s`, describe(v))
	}
	for k := range m {
		if k != "className" && k != "where" {
			return nil, parse.Schema{}, errAt(at+"."+k, "unknown key (use className and where)")
		}
	}
	class, _ := m["className"].(string)
	sp, s, err := p.sub(class, at+".className")
	if err != nil {
		return nil, parse.Schema{}, err
	}
	var where Expr
	if w, present := m["where"]; present && w != nil {
		wm, ok := w.(map[string]any)
		if !ok {
			return nil, parse.Schema{}, errAt(at+".where", "expected a constraint object, got %s", describe(w))
		}
		if where, err = sp.object(wm, at+".where", depth+1); err != nil {
			return nil, parse.Schema{}, err
		}
	}
	return &Query{Class: s.ClassName, Where: where, Limit: -1}, s, nil
}

func (p *whereParser) inQuery(path Path, not bool, v any, at string) (Expr, error) {
	if path.Type != parse.TypePointer {
		return nil, errAt(at, "$inQuery applies to Pointer fields; %q is %s", path, path.Type)
	}
	q, s, err := p.subQuery(v, at, 1)
	if err != nil {
		return nil, err
	}
	if target := p.schema.Fields[path.Field].TargetClass; s.ClassName != target {
		return nil, errAt(at+".className", "%q points to %s, not %s", path.Field, target, s.ClassName)
	}
	return InQuery{Path: path, Query: q, Key: parse.FieldObjectID, Not: not}, nil
}

func (p *whereParser) selectQuery(path Path, not bool, v any, at string) (Expr, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errAt(at, `takes {"query": {"className": "…", "where": {…}}, "key": "field"}, got %s`, describe(v))
	}
	for k := range m {
		if k != "query" && k != "key" {
			return nil, errAt(at+"."+k, "unknown key (use query and key)")
		}
	}
	q, s, err := p.subQuery(m["query"], at+".query", 1)
	if err != nil {
		return nil, err
	}
	key, _ := m["key"].(string)
	kf, ok := s.Fields[key]
	if !ok {
		if key == "" {
			return nil, errAt(at+".key", "needs key: the field of %s to compare with", s.ClassName)
		}
		return nil, p.missing(s, key, at+".key")
	}
	comparable := func(t parse.FieldType) bool {
		switch t {
		case parse.TypeString, parse.TypeNumber, parse.TypeBoolean, parse.TypeDate, parse.TypePointer, parse.TypeFile:
			return true
		}
		return false
	}
	if !comparable(kf.Type) || !comparable(path.Type) || len(path.Sub) > 0 {
		return nil, errAt(at, "$select compares String, Number, Boolean, Date, Pointer or File fields; %q is %s and %s.%s is %s", path, path.Type, s.ClassName, key, kf.Type)
	}
	return InQuery{Path: path, Query: q, Key: key, Not: not}, nil
}

func (p *whereParser) relatedTo(v any, at string, depth int) (Expr, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errAt(at, `takes {"object": <Pointer>, "key": "relationField"}, got %s`, describe(v))
	}
	class, id, ok := parse.PointerID(m["object"])
	if !ok || !parse.ValidObjectID(id) {
		return nil, errAt(at+".object", `expected {"__type":"Pointer","className":"…","objectId":"…"}`)
	}
	_, s, err := p.sub(class, at+".object")
	if err != nil {
		return nil, err
	}
	key, _ := m["key"].(string)
	f, ok := s.Fields[key]
	if !ok && key != "" {
		return nil, p.missing(s, key, at+".key")
	}
	if f.Type != parse.TypeRelation {
		return nil, errAt(at+".key", "%q is not a Relation field of %s", key, s.ClassName)
	}
	if f.TargetClass != p.schema.ClassName {
		return nil, errAt(at+".key", "%s.%s relates %s objects, not %s", s.ClassName, key, f.TargetClass, p.schema.ClassName)
	}
	owner := &Query{Class: s.ClassName, Limit: -1,
		Where: Cmp{Path: Path{Field: parse.FieldObjectID, Type: parse.TypeString}, Op: OpEq, Value: id}}
	return RelatedTo{Owner: owner, Field: key}, nil
}

// relation parses a constraint on a Relation field: a Pointer (or id) for
// "links to", $in/$nin of them, and $exists.
func (p *whereParser) relation(path Path, v any, at string) (Expr, error) {
	target := p.schema.Fields[path.Field].TargetClass
	ids := func(v any, at string) ([]any, error) {
		arr, ok := v.([]any)
		if !ok {
			return nil, errAt(at, "takes an array of Pointers or objectIds, got %s", describe(v))
		}
		out := make([]any, 0, len(arr))
		for i, item := range arr {
			id, err := relID(item, target, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			out = append(out, id)
		}
		return out, nil
	}
	m, isOps := v.(map[string]any)
	if !isOps || !isOperatorObject(m) {
		id, err := relID(v, target, at)
		if err != nil {
			return nil, err
		}
		return RelationHas{Field: path.Field, Class: p.schema.ClassName, IDs: []any{id}}, nil
	}
	if len(m) != 1 {
		return nil, errAt(at, "a Relation field takes one operator ($in or $nin)")
	}
	for op, val := range m {
		switch op {
		case "$in", "$nin", "$all":
			list, err := ids(val, at+"."+op)
			if err != nil {
				return nil, err
			}
			if op == "$all" {
				var parts []Expr
				for _, id := range list {
					parts = append(parts, RelationHas{Field: path.Field, Class: p.schema.ClassName, IDs: []any{id}})
				}
				return And{Exprs: parts}, nil
			}
			return RelationHas{Field: path.Field, Class: p.schema.ClassName, IDs: list, Not: op == "$nin"}, nil
		}
		return nil, errAt(at+"."+op, "a Relation field supports only $in, $nin and $all (or a Pointer for equality)")
	}
	return nil, nil
}

func relID(v any, target, at string) (string, error) {
	if s, ok := v.(string); ok && parse.ValidObjectID(s) {
		return s, nil
	}
	class, id, ok := parse.PointerID(v)
	if !ok || !parse.ValidObjectID(id) {
		return "", errAt(at, `expected a Pointer to %s or its objectId, got %s`, target, describe(v))
	}
	if class != "" && class != target {
		return "", errAt(at, "the relation holds %s objects, not %s", target, class)
	}
	return id, nil
}

// Earth radii for $maxDistanceIn…, as Parse uses them.
const (
	earthRadiusMiles = 3958.8
	earthRadiusKm    = 6371.0
)

// geoPoint reads a GeoPoint value or a [lat, lng] pair.
func geoPoint(v any, at string) (lat, lng float64, err error) {
	switch x := v.(type) {
	case map[string]any:
		if x["__type"] == "GeoPoint" {
			la, ok1, err1 := numberOf(x["latitude"], at)
			ln, ok2, err2 := numberOf(x["longitude"], at)
			if ok1 && ok2 && err1 == nil && err2 == nil {
				return checkLatLng(la, ln, at)
			}
		}
	case []any:
		if len(x) == 2 {
			la, ok1, err1 := numberOf(x[0], at)
			ln, ok2, err2 := numberOf(x[1], at)
			if ok1 && ok2 && err1 == nil && err2 == nil {
				return checkLatLng(la, ln, at)
			}
		}
	}
	return 0, 0, errAt(at, `expected {"__type":"GeoPoint","latitude":…,"longitude":…}, got %s`, describe(v))
}

func checkLatLng(lat, lng float64, at string) (float64, float64, error) {
	if lat < -90 || lat > 90 || lng < -180 || lng > 180 || math.IsNaN(lat) || math.IsNaN(lng) {
		return 0, 0, errAt(at, "latitude must be within ±90 and longitude within ±180")
	}
	return lat, lng, nil
}

func nonNegative(v any, at string) (float64, error) {
	f, ok, err := numberOf(v, at)
	if !ok || err != nil || f < 0 {
		return 0, errAt(at, "expected a non-negative number, got %s", describe(v))
	}
	return f, nil
}

func (p *whereParser) geo(path Path, op string, v any, ops map[string]any, at string) (Expr, error) {
	if path.Type != parse.TypeGeoPoint || len(path.Sub) > 0 {
		return nil, errAt(at, "%s applies to GeoPoint fields; %q is %s", op, path, path.Type)
	}
	switch op {
	case "$nearSphere":
		lat, lng, err := geoPoint(v, at)
		if err != nil {
			return nil, err
		}
		n := GeoNear{Path: path, Lat: lat, Lng: lng, Sort: true}
		base := at[:len(at)-len(op)]
		for k, scale := range map[string]float64{"$maxDistance": 1, "$maxDistanceInRadians": 1, "$maxDistanceInMiles": 1 / earthRadiusMiles, "$maxDistanceInKilometers": 1 / earthRadiusKm} {
			if d, ok := ops[k]; ok {
				r, err := nonNegative(d, base+k)
				if err != nil {
					return nil, err
				}
				n.MaxRadians = r * scale
			}
		}
		return n, nil
	case "$within":
		m, ok := v.(map[string]any)
		box, ok2 := m["$box"].([]any)
		if !ok || !ok2 || len(box) != 2 || len(m) != 1 {
			return nil, errAt(at, `takes {"$box": [<south-west GeoPoint>, <north-east GeoPoint>]}`)
		}
		swLat, swLng, err := geoPoint(box[0], at+".$box[0]")
		if err != nil {
			return nil, err
		}
		neLat, neLng, err := geoPoint(box[1], at+".$box[1]")
		if err != nil {
			return nil, err
		}
		if swLat > neLat || swLng > neLng {
			return nil, errAt(at+".$box", "the first corner must be south-west of the second")
		}
		return GeoBox{Path: path, SWLat: swLat, SWLng: swLng, NELat: neLat, NELng: neLng}, nil
	}
	// $geoWithin
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, errAt(at, `takes {"$centerSphere": [<center>, radians]} or {"$polygon": [<points>]}`)
	}
	if cs, ok := m["$centerSphere"]; ok {
		arr, ok := cs.([]any)
		if !ok || len(arr) != 2 {
			return nil, errAt(at+".$centerSphere", "takes [<center>, radians]")
		}
		var lat, lng float64
		var err error
		if pair, isPair := arr[0].([]any); isPair && len(pair) == 2 { // GeoJSON order: [lng, lat]
			lat, lng, err = geoPoint([]any{pair[1], pair[0]}, at+".$centerSphere[0]")
		} else {
			lat, lng, err = geoPoint(arr[0], at+".$centerSphere[0]")
		}
		if err != nil {
			return nil, err
		}
		r, err := nonNegative(arr[1], at+".$centerSphere[1]")
		if err != nil {
			return nil, err
		}
		return GeoNear{Path: path, Lat: lat, Lng: lng, MaxRadians: r}, nil
	}
	if pg, ok := m["$polygon"]; ok {
		arr, ok := pg.([]any)
		if !ok || len(arr) < 3 || len(arr) > 1000 {
			return nil, errAt(at+".$polygon", "takes 3 to 1000 points")
		}
		pts := make([][2]float64, 0, len(arr))
		for i, item := range arr {
			lat, lng, err := geoPoint(item, fmt.Sprintf("%s.$polygon[%d]", at, i))
			if err != nil {
				return nil, err
			}
			pts = append(pts, [2]float64{lat, lng})
		}
		return GeoPolygon{Path: path, Points: pts}, nil
	}
	return nil, errAt(at, `takes {"$centerSphere": …} or {"$polygon": …}`)
}
