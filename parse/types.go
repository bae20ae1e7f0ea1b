// Package parse is the Parse data model: objects, field types, the `__type`
// JSON encoding, ACLs, class schemas and class-level permissions.
//
// Objects travel through the server in their REST JSON form (the shape Parse
// Server's REST API returns): a map of field name to value, where Dates,
// Pointers, Files, GeoPoints, Polygons and Bytes are objects carrying a
// "__type" key. The helpers here build, recognise and validate those values.
package parse

import (
	"crypto/rand"
	"fmt"
	"time"

	"github.com/parsemcp/parsemcp/internal/shape"
)

// FieldType names a Parse field type as it appears in a schema.
type FieldType string

// The Parse field types.
const (
	TypeString   FieldType = "String"
	TypeNumber   FieldType = "Number"
	TypeBoolean  FieldType = "Boolean"
	TypeDate     FieldType = "Date"
	TypeObject   FieldType = "Object"
	TypeArray    FieldType = "Array"
	TypePointer  FieldType = "Pointer"
	TypeRelation FieldType = "Relation"
	TypeFile     FieldType = "File"
	TypeGeoPoint FieldType = "GeoPoint"
	TypePolygon  FieldType = "Polygon"
	TypeBytes    FieldType = "Bytes"
	TypeACL      FieldType = "ACL"
)

// FieldTypes lists every field type a schema may declare (ACL is implicit).
var FieldTypes = []FieldType{
	TypeString, TypeNumber, TypeBoolean, TypeDate, TypeObject, TypeArray,
	TypePointer, TypeRelation, TypeFile, TypeGeoPoint, TypePolygon, TypeBytes,
}

// Valid reports whether t is a known field type.
func (t FieldType) Valid() bool {
	for _, k := range FieldTypes {
		if k == t {
			return true
		}
	}
	return t == TypeACL
}

// The special (system) classes.
const (
	ClassUser         = "_User"
	ClassRole         = "_Role"
	ClassSession      = "_Session"
	ClassInstallation = "_Installation"
)

// Fields every class has.
const (
	FieldObjectID  = "objectId"
	FieldCreatedAt = "createdAt"
	FieldUpdatedAt = "updatedAt"
	FieldACL       = "ACL"
)

// Object is a Parse object in REST JSON form.
type Object = map[string]any

// DateLayout is the ISO-8601 layout Parse uses for dates (millisecond
// precision, UTC). It is fixed-width, so its strings sort chronologically.
const DateLayout = "2006-01-02T15:04:05.000Z"

// FormatDate renders t the way Parse does.
func FormatDate(t time.Time) string { return t.UTC().Format(DateLayout) }

// ParseDate accepts Parse's layout and, leniently, any RFC 3339 timestamp or a
// bare date (YYYY-MM-DD, taken as midnight UTC).
func ParseDate(s string) (time.Time, error) {
	for _, layout := range []string{DateLayout, time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an ISO-8601 date", s)
}

// Date returns the `{"__type":"Date","iso":…}` value for t.
func Date(t time.Time) map[string]any {
	return map[string]any{"__type": "Date", "iso": FormatDate(t)}
}

// Pointer returns the `{"__type":"Pointer",…}` value for class and id.
func Pointer(class, id string) map[string]any {
	return map[string]any{"__type": "Pointer", "className": class, "objectId": id}
}

// GeoPoint returns the `{"__type":"GeoPoint",…}` value.
func GeoPoint(lat, lng float64) map[string]any {
	return map[string]any{"__type": "GeoPoint", "latitude": lat, "longitude": lng}
}

// File returns the `{"__type":"File",…}` value for a stored file name.
func File(name, url string) map[string]any {
	m := map[string]any{"__type": "File", "name": name}
	if url != "" {
		m["url"] = url
	}
	return m
}

// TypeOf returns the "__type" of an encoded value, or "" when v is not one.
func TypeOf(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	s, _ := m["__type"].(string)
	return s
}

// PointerID extracts the objectId of a Pointer value (or of an included,
// fully fetched object, which carries "__type":"Object").
func PointerID(v any) (class, id string, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap {
		return "", "", false
	}
	t, _ := m["__type"].(string)
	if t != "Pointer" && t != "Object" {
		return "", "", false
	}
	class, _ = m["className"].(string)
	id, _ = m["objectId"].(string)
	return class, id, id != ""
}

// DateValue extracts the time of a Date value.
func DateValue(v any) (time.Time, bool) {
	m, ok := v.(map[string]any)
	if !ok || m["__type"] != "Date" {
		return time.Time{}, false
	}
	s, _ := m["iso"].(string)
	t, err := ParseDate(s)
	return t, err == nil
}

// ValidClassName reports whether name is a legal class name: a user class
// (letter, then letters, digits, underscores) or one of the system classes.
func ValidClassName(name string) bool {
	return systemClasses[name] || shape.Lead(name, shape.Letters, shape.Word, 120) // ^[A-Za-z][A-Za-z0-9_]{0,119}$
}

// systemClasses are the underscore-prefixed classes: Parse Server's own
// (a database it wrote may hold any of them) and _AgentAudit, this
// server's audit trail.
var systemClasses = map[string]bool{
	ClassUser: true, ClassRole: true, ClassSession: true, ClassInstallation: true, "_Product": true,
	"_PushStatus": true, "_JobStatus": true, "_JobSchedule": true, "_Hooks": true, "_GlobalConfig": true,
	"_GraphQLConfig": true, "_Audience": true, "_Idempotency": true, "_AgentAudit": true,
	"_AccessToken": true, // this server's personal access tokens
}

// ValidFieldName reports whether name is a legal user field name.
// It is ^[A-Za-z][A-Za-z0-9_]{0,127}$.
func ValidFieldName(name string) bool { return shape.Lead(name, shape.Letters, shape.Word, 128) }

// ValidObjectID reports whether id has the shape of an objectId. Parse
// generates 10 characters; imported data may carry longer alphanumeric ids.
// It is ^[A-Za-z0-9]{1,64}$.
func ValidObjectID(id string) bool { return shape.Run(id, shape.Alnum, 1, 64) }

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// NewObjectID returns a random 10-character objectId.
func NewObjectID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b[:])
}

// IDFromSeq renders n as a deterministic 10-character objectId, used by the
// demo generator so the same seed yields the same ids.
func IDFromSeq(prefix byte, n uint64) string {
	var b [10]byte
	b[0] = prefix
	for i := 9; i >= 1; i-- {
		b[i] = idAlphabet[n%uint64(len(idAlphabet))]
		n /= uint64(len(idAlphabet))
	}
	return string(b[:])
}
