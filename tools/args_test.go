package tools

import (
	"bytes"
	"reflect"
	"testing"
)

// decodeArgs' fast path (segmentio) and encoding/json, which it falls back
// to for its errors, give the same answer for every input: the same
// decoded arguments, or both refuse. A difference would make an argument
// accepted here that encoding/json refuses, or the reverse.
func TestDecodeArgsAsEncodingJSON(t *testing.T) {
	inputs := []string{
		`{}`, `null`, ``, `  {"class_name":"Ticket"}  `,
		`{"class_name":"Ticket","limit":5,"skip":10,"order":"-createdAt","keys":["a","b"],"include":"x,y"}`,
		`{"CLASS_NAME":"Ticket","Limit":3}`,                    // names in another case
		`{"class_name":"A","class_name":"B"}`,                  // the last wins
		`{"class_name":"Ticket","limit":1e2}`,                  // a whole number written as a float
		`{"class_name":"Ticket","limit":5.0}`,                  //
		`{"class_name":"Ticket","limit":5.5}`,                  //
		`{"class_name":"Ticket","limit":-0}`,                   //
		`{"class_name":"Ticket","limit":99999999999999999999}`, // overflows an int
		`{"class_name":"Ticket","limit":"5"}`,                  // a number as a string
		`{"class_name":"Ticket","skip":null}`,                  // null into an int
		`{"class_name":7}`,                                     // a number as a string
		`{"class_name":["Ticket"]}`,                            //
		`{"class_name":"Tick\u0065t"}`,                         // an escape
		`{"class_name":"\ud800"}`,                              // a lone surrogate
		"{\"class_name\":\"\xff\xfe\"}",                        // invalid UTF-8
		`{"class_name":"Ticket","where":{"status":"open","n":{"$gt":1}}}`,
		`{"class_name":"Ticket","where":"{\"status\":\"open\"}"}`, // a where sent as a string
		`{"class_name":"Ticket","where":[1]}`,
		`{"class_name":"Ticket","where":null}`,
		`{"class_name":"Ticket","keys":"a,b, c"}`,
		`{"class_name":"Ticket","keys":[1,2]}`,
		`{"class_name":"Ticket","keys":null}`,
		`{"class_name":"Ticket","apply_canonical_filter":false}`,
		`{"class_name":"Ticket","apply_canonical_filter":"false"}`,
		`{"class_name":"Ticket","apply_canonical_filter":0}`,
		`{"class_name":"Ticket","unknown":1}`, // an unknown argument
		`{"class_name":"Ticket"} {"x":1}`,     // what follows the first value
		`{"class_name":"Ticket",}`,            // not JSON
		`{"class_name":"Ticket"`,              //
		`[1,2]`, `"x"`, `7`, `true`,
	}
	for _, in := range inputs {
		got, gotErr := decodeArgs[queryArgs]([]byte(in))
		want, wantErr := decodeArgsStd[queryArgs](normalizeEmpty([]byte(in)))
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v, %v\nwant %+v, %v", in, got, gotErr, want, wantErr)
		}
	}
}

// normalizeEmpty is decodeArgs' reading of no arguments.
func normalizeEmpty(raw []byte) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return []byte("{}")
	}
	return raw
}
