package frontmatter

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestScalar(t *testing.T) {
	for in, want := range map[string]string{
		"debugging":                              "debugging",
		"claude-code 1.0":                        "claude-code 1.0",
		"Self-test: bisect a regression":         `"Self-test: bisect a regression"`,
		"yes":                                    `"yes"`,
		"5-whys":                                 `"5-whys"`,
		"":                                       `""`,
		"trailing ":                              `"trailing "`,
		"a, b":                                   `"a, b"`,
		"quote \" and \\ and\nnewline\x7f\u2028": `"quote \" and \\ and\nnewline\u007f\u2028"`,
		"Überblick":                              "Überblick",
	} {
		if got := Scalar(in); got != want {
			t.Errorf("Scalar(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestEncodeThenRead(t *testing.T) {
	fields := []Field{
		{Key: "id", Value: "p1"},
		{Key: "title", Value: "Self-test: bisect"},
		{Key: "tags", List: []string{"a, b", "c"}},
		{Key: "none", IsList: true},
		{Key: "createdAt", Value: "2026-11-22T10:00:00Z", Raw: true},
	}
	content := "---\nnot front matter\n---\n\nbody\n"
	data := Encode(fields, content)
	want := "---\nid: p1\ntitle: \"Self-test: bisect\"\ntags: [\"a, b\", c]\nnone: []\ncreatedAt: 2026-11-22T10:00:00Z\n---\n\n" + content + "\n"
	if string(data) != want {
		t.Fatalf("Encode:\n%q\nwant\n%q", data, want)
	}
	doc := Read(data)
	if !doc.HasFrontMatter || doc.Content != content {
		t.Fatalf("Read: front matter %v, content %q", doc.HasFrontMatter, doc.Content)
	}
	got := map[string]any{}
	for _, v := range doc.Values {
		if v.Key == "tags" || v.Key == "none" {
			got[v.Key] = v.List()
		} else {
			got[v.Key] = v.Scalar()
		}
	}
	wantVals := map[string]any{"id": "p1", "title": "Self-test: bisect", "tags": []string{"a, b", "c"}, "none": []string(nil),
		"createdAt": "2026-11-22T10:00:00Z"}
	if diff := cmp.Diff(wantVals, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

func TestReadByHand(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		scalars    map[string]string
		lists      map[string][]string
		content    string
	}{
		{name: "none", file: "just text\n", content: "just text"},
		{name: "unclosed", file: "---\na: b\n", content: "---\na: b"},
		{name: "BOM and CRLF", file: "\uFEFF---\r\nTitle: x\r\n---\r\n\r\nbody\r\n", scalars: map[string]string{"Title": "x"}, content: "body\r"},
		{name: "comments, quotes", file: "---\n# c\na: 'it''s' # no\nb: plain # yes\nc: \"\\x41\\u00e9\\N\\_\\L\\P\\e\\0\"\n---\n",
			scalars: map[string]string{"a": "it's", "b": "plain", "c": "A\u00e9\u0085\u00a0\u2028\u2029\x1b\x00"}},
		{name: "blocks", file: "---\nlit: |\n  one\n    two\n\nfold: >\n  a\n  b\nplain: x\n  y\nq: \"multi\n  line\"\n---\n",
			scalars: map[string]string{"lit": "one\n  two", "fold": "a b", "plain": "x y", "q": "multi line"}},
		{name: "lists", file: "---\nflow: [a, 'b, c', \"d]\"]\nblock:\n  - x\n  - 'y'\n  -\ncomma: p, q\ncommented: # none\n  - z\n---\n",
			lists: map[string][]string{"flow": {"a", "b, c", "d]"}, "block": {"x", "y"}, "comma": {"p", "q"}, "commented": {"z"}}},
		{name: "bad bytes", file: "---\nt: \xff\n---\n", scalars: map[string]string{"t": "\uFFFD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := Read([]byte(tc.file))
			if doc.Content != tc.content {
				t.Errorf("content %q, want %q", doc.Content, tc.content)
			}
			vals := map[string]Value{}
			for _, v := range doc.Values {
				vals[v.Key] = v
			}
			for k, want := range tc.scalars {
				if got := vals[k].Scalar(); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			for k, want := range tc.lists {
				if diff := cmp.Diff(want, vals[k].List()); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

func TestNormalizeKeyAndParseDate(t *testing.T) {
	for _, k := range []string{"createdAt", "created_at", "created-at", "Created At"} {
		if NormalizeKey(k) != "createdat" {
			t.Errorf("NormalizeKey(%q) = %q", k, NormalizeKey(k))
		}
	}
	want := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	for _, s := range []string{"2026-11-22T10:00:00+02:00", "\"2026-11-22T08:00:00Z\"", "2026-11-22 08:00:00", "2026-11-22T08:00:00"} {
		if got := ParseDate(s); !got.Equal(want) {
			t.Errorf("ParseDate(%q) = %v", s, got)
		}
	}
	if !ParseDate("2026-11-22").Equal(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)) {
		t.Error("a bare date")
	}
	if !ParseDate("last tuesday").IsZero() {
		t.Error("an unreadable date is not zero")
	}
}

// FuzzRead: any file reads without panicking, and what it reads is a fixed
// point: each value written back (as a scalar and as a list) and read again
// is the same, and so is the content. So a hand-edited file survives the
// store's rewrite of it. The corpus is the one FuzzParseKnowledge found.
func FuzzRead(f *testing.F) {
	f.Add([]byte("---\ntags:\n- one\n-   \"two, three\"\ndescription: |\n  line one\n---\nx"))
	f.Add([]byte("\uFEFF---\r\ntitle: 'It''s'\r\ncreated_at: 2026-11-22\r\n---\r\n\r\nbody\r\n"))
	f.Add([]byte("---\ntitle: \"\\ud83d\\ude00 \\x41\"\ntags: [a, 'b', \"c\"]\n...\n"))
	f.Add([]byte("no front matter at all"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc := Read(data)
		var fields []Field
		for i, v := range doc.Values {
			k := "k" + strings.Repeat("x", i)
			fields = append(fields, Field{Key: k + "s", Value: v.Scalar()}, Field{Key: k + "l", List: v.List(), IsList: true})
		}
		again := Read(Encode(fields, doc.Content))
		if again.Content != doc.Content {
			t.Fatalf("content %q came back as %q", doc.Content, again.Content)
		}
		if len(again.Values) != 2*len(doc.Values) {
			t.Fatalf("%d values came back as %d", len(doc.Values), len(again.Values))
		}
		for i, v := range doc.Values {
			if s := again.Values[2*i].Scalar(); s != v.Scalar() {
				t.Fatalf("scalar %q came back as %q", v.Scalar(), s)
			}
			if diff := cmp.Diff(v.List(), again.Values[2*i+1].List(), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("list (-first +second):\n%s", diff)
			}
		}
	})
}
