package query

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	segjson "github.com/segmentio/encoding/json"
)

// Ordered JSON: decoding that keeps an object's key order (OrderedObject), and reading decoded values.

// OrderedObject is a JSON object that keeps its keys' order.
type OrderedObject struct {
	Keys   []string
	Values map[string]any
}

// decodeOrdered decodes JSON text, objects as *OrderedObject, with
// encoding/json's answers. Valid JSON is read in place by segmentio's
// tokenizer (TestDecodeOrderedAsEncodingJSON holds the two to the same
// values: escapes, invalid UTF-8, numbers, duplicates, depth); invalid
// text by encoding/json's decoder, which words the refusals. Its token
// reader allocates for every token (an error value for each scalar).
func decodeOrdered(raw []byte) (any, error) {
	if segjson.Valid(raw) {
		r := orderedReader{t: segjson.NewTokenizer(raw)}
		r.t.Next()
		return r.value(0)
	}
	return decodeOrderedStd(raw)
}

// orderedReader reads valid JSON from a tokenizer: value reads the value
// whose first token is the current one, and leaves its last token
// current.
type orderedReader struct{ t *segjson.Tokenizer }

func (r orderedReader) value(depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
	}
	t := r.t
	switch t.Delim {
	case '[':
		arr := []any{}
		for t.Next() && t.Delim != ']' {
			if t.Delim == ',' {
				t.Next()
			}
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		return arr, nil
	case '{':
		o := &OrderedObject{Values: map[string]any{}}
		for t.Next() && t.Delim != '}' {
			if t.Delim == ',' {
				t.Next()
			}
			k := string(t.String())
			t.Next() // the colon
			t.Next()
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			if _, dup := o.Values[k]; !dup {
				o.Keys = append(o.Keys, k)
			}
			o.Values[k] = v
		}
		return o, nil
	}
	switch t.Kind().Class() {
	case segjson.Null:
		return nil, nil
	case segjson.Bool:
		return t.Bool(), nil
	case segjson.Num:
		f, err := strconv.ParseFloat(string(t.Value), 64)
		if err != nil {
			return nil, fmt.Errorf("number %s out of range", t.Value)
		}
		return f, nil
	}
	return string(t.String()), nil
}

// decodeOrderedStd is decodeOrdered by encoding/json's decoder.
func decodeOrderedStd(raw []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	// Only the end may follow: a token, or text that is none (an error
	// other than io.EOF), is refused alike.
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the pipeline")
	}
	return v, nil
}

const maxJSONDepth = 64

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		case '{':
			o := &OrderedObject{Values: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.Values[k]; !dup {
					o.Keys = append(o.Keys, k)
				}
				o.Values[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		f, err := t.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s out of range", t)
		}
		return f, nil
	}
	return tok, nil // string, bool, nil
}

// asObject returns an object's keys (in order for an OrderedObject, sorted
// for a map) and values.
func asObject(v any) ([]string, map[string]any, bool) {
	switch o := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys, o, true
	case *OrderedObject:
		if o == nil {
			return nil, nil, false
		}
		return o.Keys, o.Values, true
	}
	return nil, nil, false
}

// plain converts OrderedObjects back to maps, recursively.
func plain(v any) any {
	switch x := v.(type) {
	case *OrderedObject:
		if x == nil {
			return nil
		}
		m := make(map[string]any, len(x.Values))
		for k, e := range x.Values {
			m[k] = plain(e)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = plain(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = plain(e)
		}
		return a
	}
	return v
}

func describeAny(v any) string {
	if o, ok := v.(*OrderedObject); ok && o != nil {
		if t, ok := o.Values["__type"].(string); ok {
			return "a " + t
		}
		return "an object"
	}
	return describe(v)
}

// MarshalJSON renders the object with its keys in their order.
func (o *OrderedObject) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.Values[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
