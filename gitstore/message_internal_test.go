package gitstore

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// The commit message and file name of a thought are written without fmt
// and without converting the subject to runes (they run for every
// thought); these are the plain versions they replaced, which they must
// match byte for byte: every commit id depends on them.

func plainFirstLine(s string, max int) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > max {
		r := []rune(line)
		line = string(r[:max-1]) + "…"
	}
	return line
}

func plainThoughtMessage(sessionID string, req ledger.AppendRequest) string {
	t := req.Thought
	var m strings.Builder
	text := strings.TrimSpace(t.Thought)
	subject := plainFirstLine(text, 72)
	fmt.Fprintf(&m, "Thought %d: %s\n", t.ThoughtNumber, subject)
	first, rest, _ := strings.Cut(text, "\n")
	body := strings.TrimSpace(rest)
	if strings.TrimSpace(first) != subject {
		body = text
	}
	if body != "" {
		m.WriteString("\n" + body + "\n")
	}
	m.WriteString("\n" + trailerSession + ": " + sessionID + "\n")
	fmt.Fprintf(&m, "%s: %d\n", trailerThought, t.ThoughtNumber)
	if req.Branch != "" {
		m.WriteString(trailerBranch + ": " + req.Branch + "\n")
	}
	if t.IsRevision && t.RevisesThought != nil {
		if req.Revises != "" {
			fmt.Fprintf(&m, "%s: %s (thought %d)\n", trailerRevises, req.Revises, *t.RevisesThought)
		} else {
			fmt.Fprintf(&m, "%s: thought %d\n", trailerRevises, *t.RevisesThought)
		}
	}
	return m.String()
}

func TestThoughtMessageAsPlainFormatting(t *testing.T) {
	long := strings.Repeat("word ", 20)
	texts := []string{
		"",
		"short",
		"  padded subject  \n\n  and a body  \n",
		long,
		long + "\nsecond line",
		strings.Repeat("é", 71) + "x",
		strings.Repeat("é", 72) + "x",
		strings.Repeat("日本", 40) + "\n本文",
		strings.Repeat("a", 70) + "\xff\xfe" + strings.Repeat("b", 10), // not UTF-8, cut
		"\xffshort but not UTF-8",
		strings.Repeat("🙂", 80),
	}
	revises := 3
	for _, text := range texts {
		for _, n := range []int{1, 9, 10, 99, 100, 999, 1000, 12345} {
			for _, req := range []ledger.AppendRequest{
				{Thought: ledger.ThoughtData{Thought: text, ThoughtNumber: n}},
				{Branch: "alt-1", Thought: ledger.ThoughtData{Thought: text, ThoughtNumber: n, IsRevision: true, RevisesThought: &revises}},
				{Revises: "0123456789abcdef0123456789abcdef01234567", Thought: ledger.ThoughtData{Thought: text, ThoughtNumber: n, IsRevision: true, RevisesThought: &revises}},
			} {
				if got, want := thoughtMessage("s-1", req), plainThoughtMessage("s-1", req); got != want {
					t.Fatalf("thought %d %q: message\n%q\nwant\n%q", n, text, got, want)
				}
			}
		}
		for _, max := range []int{1, 2, 60, 72, 100} {
			if got, want := firstLine(text, max), plainFirstLine(text, max); got != want {
				t.Fatalf("firstLine(%q, %d) = %q, want %q", text, max, got, want)
			}
		}
	}
}

func TestThoughtFileNames(t *testing.T) {
	for _, n := range []int{-12, -1, 0, 1, 7, 9, 10, 42, 99, 100, 101, 999, 1000, 123456} {
		if got, want := thoughtFile(n), fmt.Sprintf("%03d.json", n); got != want {
			t.Errorf("thoughtFile(%d) = %q, want %q", n, got, want)
		}
	}
}
