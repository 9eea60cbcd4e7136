package gateway

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

var memberCases = []string{
	`{}`,
	` { } `,
	`{"operation":"thought","args":{"thought":"S1|H|x","nextThoughtNeeded":true}}`,
	"{\n\t\"a\" : 1 ,\r\n \"b\":[1,{\"c\":\"}]\"}], \"d\" : null}",
	`{"a":1,"b":2,"a":3}`,
	`{"a":"x\"y\\","b":"\u00e9\n"}`,
	`{"\u0061":1,"a":2}`,
	`{"k\"ey":true,"<&>":false}`,
	`{"é":"ü","日本":[]}`,
	`{"n":-1.5e+10,"t":true,"f":false,"z":null,"s":""}`,
	`{"deep":{"a":{"b":[[[{"c":"]"}]]]}},"after":"x"}`,
	`{"a":1}x`,
	`{"a":}`,
	`{"a" 1}`,
	`[1,2]`,
	`"str"`,
	`{"a":"\xff"}`,
	"{\"\xff\":1}",
}

// TestScanMembersAgreesWithDecoder: the one-pass scan gives what
// encoding/json gives, members, values, order, repeated keys and errors.
func TestScanMembersAgreesWithDecoder(t *testing.T) {
	for _, c := range memberCases {
		checkMembers(t, []byte(c))
	}
}

func FuzzScanMembers(f *testing.F) {
	for _, c := range memberCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkMembers(t, raw) })
}

func checkMembers(t *testing.T, raw []byte) {
	t.Helper()
	got, gerr := objectMembers(raw, "args")
	trimmed := bytes.Trim(raw, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return // objectMembers answers these before either path
	}
	want, werr := decodeMembers(json.RawMessage(trimmed), "args")
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("%q: error %v, encoding/json says %v", raw, gerr, werr)
	}
	if len(got) != len(want) {
		t.Fatalf("%q: members %v, encoding/json says %v", raw, got, want)
	}
	for i := range got {
		if got[i].key != want[i].key || string(got[i].value) != string(want[i].value) {
			t.Fatalf("%q: member %d = %q: %s, encoding/json says %q: %s", raw, i, got[i].key, got[i].value, want[i].key, want[i].value)
		}
	}
	if gerr == nil {
		var a, b any
		ea, eb := json.Unmarshal(encodeMembers(got), &a), json.Unmarshal(encodeMembers(want), &b)
		if ea != nil || eb != nil || !reflect.DeepEqual(a, b) || string(encodeMembers(got)) != string(oldEncodeMembers(want)) {
			t.Fatalf("%q: encodeMembers %s, before %s", raw, encodeMembers(got), oldEncodeMembers(want))
		}
	}
}

// oldEncodeMembers is encodeMembers as it was, with json.Marshal per key.
func oldEncodeMembers(ms []member) []byte {
	b := []byte{'{'}
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(m.key)
		b = append(b, k...)
		b = append(b, ':')
		b = append(b, m.value...)
	}
	return append(b, '}')
}

// BenchmarkCallArgs: a thought call's arguments split and re-encoded, by
// the one-pass scan and by encoding/json as before.
func BenchmarkCallArgs(b *testing.B) {
	raw := json.RawMessage(`{"operation":"thought","args":{"thought":"S3|E|S1,S2|the logs show the cache was cold when the deploy started, so the first requests missed","nextThoughtNeeded":true,"thoughtNumber":3,"totalThoughts":10}}`)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ms, _ := objectMembers(raw, "arguments")
			args, _ := objectMembers(ms[1].value, "args")
			encodeMembers(args)
		}
	})
	b.Run("decoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ms, _ := decodeMembers(raw, "arguments")
			args, _ := decodeMembers(ms[1].value, "args")
			oldEncodeMembers(args)
		}
	})
}
