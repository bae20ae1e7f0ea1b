package parse

import (
	"encoding/base64"
	"fmt"
	"time"
)

// Normalized is a REST value checked against its field type and reduced to
// what a backend stores. Exactly one field is meaningful, chosen by the type.
type Normalized struct {
	Null   bool
	String string    // String, Pointer (objectId), File (name), Bytes (base64)
	Number float64   // Number
	Bool   bool      // Boolean
	Time   time.Time // Date
	JSON   any       // Object, Array (the decoded value); Polygon (coordinates)
	Lat    float64   // GeoPoint
	Lng    float64   // GeoPoint
}

// Normalize checks v against field f (named name) and returns its storage
// form. Errors name the field and what was expected.
func Normalize(name string, f Field, v any) (Normalized, error) {
	if v == nil {
		return Normalized{Null: true}, nil
	}
	bad := func(want string) error {
		return fmt.Errorf("field %q is a %s: expected %s, got %T", name, f.Type, want, v)
	}
	switch f.Type {
	case TypeString:
		if s, ok := v.(string); ok {
			return Normalized{String: s}, nil
		}
		return Normalized{}, bad("a string")
	case TypeNumber:
		switch n := v.(type) {
		case float64:
			return Normalized{Number: n}, nil
		case int:
			return Normalized{Number: float64(n)}, nil
		case int64:
			return Normalized{Number: float64(n)}, nil
		}
		return Normalized{}, bad("a number")
	case TypeBoolean:
		if b, ok := v.(bool); ok {
			return Normalized{Bool: b}, nil
		}
		return Normalized{}, bad("true or false")
	case TypeDate:
		if t, ok := DateValue(v); ok {
			return Normalized{Time: t}, nil
		}
		if s, ok := v.(string); ok {
			if t, err := ParseDate(s); err == nil {
				return Normalized{Time: t}, nil
			}
		}
		if t, ok := v.(time.Time); ok {
			return Normalized{Time: t.UTC()}, nil
		}
		return Normalized{}, bad(`{"__type":"Date","iso":"…"}`)
	case TypeObject:
		if m, ok := v.(map[string]any); ok {
			return Normalized{JSON: m}, nil
		}
		return Normalized{}, bad("an object")
	case TypeArray:
		if a, ok := v.([]any); ok {
			return Normalized{JSON: a}, nil
		}
		return Normalized{}, bad("an array")
	case TypePointer:
		class, id, ok := PointerID(v)
		if !ok || !ValidObjectID(id) {
			return Normalized{}, bad(`{"__type":"Pointer","className":"` + f.TargetClass + `","objectId":"…"}`)
		}
		if class != f.TargetClass {
			return Normalized{}, fmt.Errorf("field %q points to %s, not %s", name, f.TargetClass, class)
		}
		return Normalized{String: id}, nil
	case TypeFile:
		if m, ok := v.(map[string]any); ok && m["__type"] == "File" {
			if n, ok := m["name"].(string); ok && n != "" {
				return Normalized{String: n}, nil
			}
		}
		return Normalized{}, bad(`{"__type":"File","name":"…"}`)
	case TypeGeoPoint:
		if m, ok := v.(map[string]any); ok && m["__type"] == "GeoPoint" {
			lat, ok1 := m["latitude"].(float64)
			lng, ok2 := m["longitude"].(float64)
			if ok1 && ok2 && lat >= -90 && lat <= 90 && lng >= -180 && lng <= 180 {
				return Normalized{Lat: lat, Lng: lng}, nil
			}
		}
		return Normalized{}, bad(`{"__type":"GeoPoint","latitude":-90..90,"longitude":-180..180}`)
	case TypePolygon:
		if m, ok := v.(map[string]any); ok && m["__type"] == "Polygon" {
			if c, ok := m["coordinates"].([]any); ok && len(c) >= 3 {
				for _, pt := range c {
					p, ok := pt.([]any)
					if !ok || len(p) != 2 {
						return Normalized{}, bad("a Polygon of [lat, lng] pairs")
					}
					if _, ok := p[0].(float64); !ok {
						return Normalized{}, bad("a Polygon of [lat, lng] pairs")
					}
					if _, ok := p[1].(float64); !ok {
						return Normalized{}, bad("a Polygon of [lat, lng] pairs")
					}
				}
				return Normalized{JSON: closeRing(c)}, nil // stored closed, as Parse does
			}
		}
		return Normalized{}, bad(`{"__type":"Polygon","coordinates":[[lat,lng],…]} with at least 3 points`)
	case TypeBytes:
		if m, ok := v.(map[string]any); ok && m["__type"] == "Bytes" {
			if s, ok := m["base64"].(string); ok {
				if _, err := base64.StdEncoding.DecodeString(s); err == nil {
					return Normalized{String: s}, nil
				}
			}
		}
		return Normalized{}, bad(`{"__type":"Bytes","base64":"…"}`)
	case TypeRelation:
		return Normalized{}, fmt.Errorf("field %q is a Relation: link objects with AddRelation, not by value", name)
	}
	return Normalized{}, fmt.Errorf("field %q has unsupported type %s", name, f.Type)
}

// Denormalize is the inverse of Normalize: it rebuilds the REST value.
// createdAt and updatedAt are returned as bare ISO strings, as Parse does.
func Denormalize(name string, f Field, n Normalized) any {
	if n.Null {
		return nil
	}
	switch f.Type {
	case TypeString:
		return n.String
	case TypeNumber:
		return n.Number
	case TypeBoolean:
		return n.Bool
	case TypeDate:
		if name == FieldCreatedAt || name == FieldUpdatedAt {
			return FormatDate(n.Time)
		}
		return Date(n.Time)
	case TypeObject, TypeArray:
		return n.JSON
	case TypePointer:
		return Pointer(f.TargetClass, n.String)
	case TypeFile:
		return File(n.String, "")
	case TypeGeoPoint:
		return GeoPoint(n.Lat, n.Lng)
	case TypePolygon:
		return map[string]any{"__type": "Polygon", "coordinates": n.JSON}
	case TypeBytes:
		return map[string]any{"__type": "Bytes", "base64": n.String}
	}
	return nil
}
