package gateway

// The gateway splits every call's arguments into members (operation, args,
// flat keys) before the operation decodes them. Doing that with
// encoding/json cost a map, a token stream and a copy of every value per
// call; scanMembers cuts the members out of the bytes in one pass. It runs
// only on input json.Valid accepts, so its answers are those of
// encoding/json, and anything it does not expect falls back to it.

import (
	"encoding/json"
	"unicode/utf8"
)

// scanMembers lists the members of the JSON object raw (already known to
// be valid JSON) in order, a repeated key at its first place with its last
// value, as objectMembers does. ok is false if raw is not an object or a
// key needs encoding/json to decode it.
func scanMembers(raw []byte) (out []member, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil, true
	}
	for i < len(raw) && raw[i] == '"' {
		end := skipString(raw, i)
		key, ok := plainKey(raw[i:end])
		if !ok {
			return nil, false
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
		vend := skipValue(raw, i)
		if vend <= i {
			return nil, false
		}
		value := json.RawMessage(raw[i:vend:vend])
		dup := false
		for k := range out {
			if out[k].key == key {
				out[k].value, dup = value, true
				break
			}
		}
		if !dup {
			out = append(out, member{key: key, value: value})
		}
		i = skipSpace(raw, vend)
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return out, true
		default:
			return nil, false
		}
	}
	return nil, false
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) {
		switch raw[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string starting at raw[i].
func skipString(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

// skipValue returns the index just past the value starting at raw[i].
func skipValue(raw []byte, i int) int {
	if i >= len(raw) {
		return i
	}
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				j = skipString(raw, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(raw)
	}
	j := i
	for j < len(raw) {
		switch raw[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
		j++
	}
	return j
}

// plainKey is the key a quoted JSON string holds when it has no escapes
// and is valid UTF-8 (what agents send); otherwise ok is false and
// encoding/json decodes it.
func plainKey(quoted []byte) (string, bool) {
	if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
		return "", false
	}
	s := quoted[1 : len(quoted)-1]
	for _, c := range s {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// appendKey writes key as a JSON string as json.Marshal would: directly
// when it holds nothing Marshal escapes.
func appendKey(b []byte, key string) []byte {
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			k, _ := json.Marshal(key)
			return append(b, k...)
		}
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"')
}

// plainString is the string a JSON string value holds when it needs no
// decoding (see plainKey).
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' || skipString(raw, 0) != len(raw) {
		return "", false
	}
	return plainKey(raw)
}
