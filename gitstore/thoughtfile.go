package gitstore

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// appendThoughtFile writes a thought file as json.MarshalIndent(td, "",
// "  ") writes it, for the thoughts nearly every call records: no critique
// and no RLM run (ok is false for the others, which encoding/json writes).
// The file is written for every thought, and encoding/json's reflection
// and second pass to indent were 5 % of the CPU of a memory-stored
// thought's call; the bytes must not change, since they are the blob a
// commit names (TestThoughtFileAsEncodingJSON).
func appendThoughtFile(b []byte, td *ledger.ThoughtData) (_ []byte, ok bool) {
	if td.Critique != nil || td.RLM != nil || td.Code != nil {
		return b, false
	}
	ts, err := td.Timestamp.MarshalJSON()
	if err != nil {
		return b, false
	}
	b = append(b, "{\n  \"thought\": "...)
	b = appendQuoted(b, td.Thought)
	b = append(b, ",\n  \"thoughtNumber\": "...)
	b = strconv.AppendInt(b, int64(td.ThoughtNumber), 10)
	b = append(b, ",\n  \"totalThoughts\": "...)
	b = strconv.AppendInt(b, int64(td.TotalThoughts), 10)
	b = append(b, ",\n  \"nextThoughtNeeded\": "...)
	b = strconv.AppendBool(b, td.NextThoughtNeeded)
	if td.IsRevision {
		b = append(b, ",\n  \"isRevision\": true"...)
	}
	if td.RevisesThought != nil {
		b = append(b, ",\n  \"revisesThought\": "...)
		b = strconv.AppendInt(b, int64(*td.RevisesThought), 10)
	}
	if td.BranchFromThought != nil {
		b = append(b, ",\n  \"branchFromThought\": "...)
		b = strconv.AppendInt(b, int64(*td.BranchFromThought), 10)
	}
	if td.BranchID != "" {
		b = append(b, ",\n  \"branchId\": "...)
		b = appendQuoted(b, td.BranchID)
	}
	if td.NeedsMoreThoughts {
		b = append(b, ",\n  \"needsMoreThoughts\": true"...)
	}
	if td.IncludeGuide {
		b = append(b, ",\n  \"includeGuide\": true"...)
	}
	b = append(b, ",\n  \"timestamp\": "...)
	b = append(b, ts...)
	return append(b, "\n}"...), true
}

// appendQuoted quotes s as json.Marshal does, HTML characters escaped:
// directly when nothing in it needs escaping, else through json.Marshal.
func appendQuoted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
