package notebook

import (
	"sort"
	"strings"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// The templates Create knows.
const (
	TemplateBlank             = "blank"
	TemplateSequentialFeynman = "sequential-feynman"
)

// Templates lists the template names, for help texts and schemas.
var Templates = []string{TemplateBlank, TemplateSequentialFeynman}

// packageJSON is a new notebook's package.json: install_deps adds its
// dependencies.
func packageJSON(lang Language) string {
	s := "{\n  \"type\": \"module\",\n  \"dependencies\": {}"
	if lang == TypeScript {
		s += ",\n  \"devDependencies\": {}"
	}
	return s + "\n}\n"
}

// templateCells returns a template's cells (without ids).
func templateCells(name, title string, lang Language) ([]Cell, error) {
	head := []Cell{
		{Type: TitleCell, Text: title},
		{Type: PackageJSONCell, Filename: "package.json", Source: packageJSON(lang), Status: StatusIdle},
	}
	code := func(filename, ts, js string) Cell {
		c := Cell{Type: CodeCell, Filename: filename + lang.ext(), Language: lang, Status: StatusIdle, Source: ts}
		if lang == JavaScript {
			c.Source = js
		}
		// The modules import each other by filename: the extension
		// follows the language.
		c.Source = strings.ReplaceAll(c.Source, "{{ext}}", lang.ext())
		return c
	}
	md := func(text string) Cell { return Cell{Type: MarkdownCell, Text: text} }
	switch name {
	case TemplateBlank:
		return append(head,
			md("Write what this notebook is about, then add code cells. Each code cell is a module: export what later cells need and import it by filename (`import { x } from './code-1"+lang.ext()+"'`)."),
			code("code-1", "const greeting: string = 'Hello from a notebook';\nconsole.log(greeting);\n", "const greeting = 'Hello from a notebook';\nconsole.log(greeting);\n"),
		), nil
	case TemplateSequentialFeynman:
		return append(head,
			md(feynmanIntro),
			md(feynmanExplain),
			code("explain", feynmanExplainTS, feynmanExplainJS),
			md(feynmanCheckIntro),
			code("check", feynmanCheckTS, feynmanCheckJS),
			md(feynmanRefineIntro),
			code("refine", feynmanRefineTS, feynmanRefineJS),
			md(feynmanTeachBack),
		), nil
	}
	return nil, ledger.InvalidField("template", "expected one of %s, got %q", strings.Join(Templates, ", "), name)
}

func sortSummaries(s []Summary) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].UpdatedAt != s[j].UpdatedAt {
			return s[i].UpdatedAt > s[j].UpdatedAt
		}
		return s[i].ID < s[j].ID
	})
}

const feynmanIntro = `The Feynman technique, one step at a time: explain an idea in plain words, turn each claim of the explanation into code that can fail, run it, and rewrite the explanation where the code disagreed. The worked example below explains binary search; replace it with your own concept and keep the shape: **explain → check → refine → teach back**.`

const feynmanExplain = `## 1. Explain it simply

*Binary search* finds a value in a **sorted** list by looking at the middle element: if the middle is too small, the value can only be in the right half; if it is too big, only in the left half. Each look halves what is left, so a list of n elements needs at most about log₂(n) + 1 looks.

The claims to check:

1. it finds every value that is in the list;
2. it reports values that are not in the list as missing;
3. it never needs more than ⌊log₂ n⌋ + 1 looks.

The cell below is the explanation written as code: it counts its looks so that claim 3 can be checked.`

const feynmanExplainTS = `export interface SearchResult {
  index: number; // -1 when the value is missing
  looks: number; // how many elements were compared
}

export function binarySearch(sorted: number[], value: number): SearchResult {
  let lo = 0;
  let hi = sorted.length - 1;
  let looks = 0;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    looks++;
    if (sorted[mid] === value) return { index: mid, looks };
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid - 1;
  }
  return { index: -1, looks };
}

console.log(binarySearch([1, 3, 5, 7, 9, 11], 7));
`

const feynmanExplainJS = `export function binarySearch(sorted, value) {
  let lo = 0;
  let hi = sorted.length - 1;
  let looks = 0; // how many elements were compared
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    looks++;
    if (sorted[mid] === value) return { index: mid, looks };
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid - 1;
  }
  return { index: -1, looks }; // index -1: the value is missing
}

console.log(binarySearch([1, 3, 5, 7, 9, 11], 7));
`

const feynmanCheckIntro = `## 2. Check the explanation

Each claim becomes an assertion over many lists. A claim that fails throws, the cell is marked failed, and its error says which claim and which input: that is where the explanation was wrong or incomplete.`

const feynmanCheckTS = `import { binarySearch } from './explain{{ext}}';

enum Claim {
  FindsPresent = 'finds every value in the list',
  ReportsMissing = 'reports missing values as -1',
  FewLooks = 'needs at most floor(log2 n) + 1 looks',
}

function check(claim: Claim, ok: boolean, input: string): void {
  if (!ok) throw new Error('claim "' + claim + '" fails for ' + input);
}

let lists = 0;
for (let n = 1; n <= 200; n++) {
  const sorted: number[] = Array.from({ length: n }, (_, i) => i * 2);
  const bound = Math.floor(Math.log2(n)) + 1;
  for (const v of sorted) {
    const r = binarySearch(sorted, v);
    check(Claim.FindsPresent, sorted[r.index] === v, 'n=' + n + ', value ' + v);
    check(Claim.FewLooks, r.looks <= bound, 'n=' + n + ', value ' + v + ' (' + r.looks + ' looks)');
  }
  for (const v of [-1, 1, 2 * n + 1]) {
    check(Claim.ReportsMissing, binarySearch(sorted, v).index === -1, 'n=' + n + ', value ' + v);
  }
  lists++;
}
console.log('all three claims hold on ' + lists + ' sorted lists');
`

const feynmanCheckJS = `import { binarySearch } from './explain{{ext}}';

const Claim = {
  FindsPresent: 'finds every value in the list',
  ReportsMissing: 'reports missing values as -1',
  FewLooks: 'needs at most floor(log2 n) + 1 looks',
};

function check(claim, ok, input) {
  if (!ok) throw new Error('claim "' + claim + '" fails for ' + input);
}

let lists = 0;
for (let n = 1; n <= 200; n++) {
  const sorted = Array.from({ length: n }, (_, i) => i * 2);
  const bound = Math.floor(Math.log2(n)) + 1;
  for (const v of sorted) {
    const r = binarySearch(sorted, v);
    check(Claim.FindsPresent, sorted[r.index] === v, 'n=' + n + ', value ' + v);
    check(Claim.FewLooks, r.looks <= bound, 'n=' + n + ', value ' + v + ' (' + r.looks + ' looks)');
  }
  for (const v of [-1, 1, 2 * n + 1]) {
    check(Claim.ReportsMissing, binarySearch(sorted, v).index === -1, 'n=' + n + ', value ' + v);
  }
  lists++;
}
console.log('all three claims hold on ' + lists + ' sorted lists');
`

const feynmanRefineIntro = `## 3. Refine

The checks above only used lists of distinct values. The explanation says "finds the value" but not *which* copy when a value repeats, and a reader who uses binary search to count occurrences needs to know. Probing that gap: with duplicates the plain search returns whichever copy the halving lands on. The refined explanation: to find the **first** copy, do not stop at a match — keep halving to the left, remembering the match. The cell checks the refined version against a linear scan.`

const feynmanRefineTS = `import { binarySearch } from './explain{{ext}}';

export function firstIndex(sorted: number[], value: number): number {
  let lo = 0;
  let hi = sorted.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < value) lo = mid + 1;
    else {
      if (sorted[mid] === value) found = mid;
      hi = mid - 1;
    }
  }
  return found;
}

const withCopies: number[] = [1, 2, 2, 2, 2, 2, 3, 4];
console.log('plain search lands on index', binarySearch(withCopies, 2).index, '- the first 2 is at', withCopies.indexOf(2));

let mismatches = 0;
for (let n = 1; n <= 60; n++) {
  const sorted = Array.from({ length: n }, (_, i) => Math.floor(i / 3));
  for (let v = -1; v <= n / 3 + 1; v++) {
    if (firstIndex(sorted, v) !== sorted.indexOf(v)) mismatches++;
  }
}
if (mismatches > 0) throw new Error(mismatches + ' lists disagree with a linear scan');
console.log('firstIndex agrees with a linear scan on lists with repeated values');
`

const feynmanRefineJS = `import { binarySearch } from './explain{{ext}}';

export function firstIndex(sorted, value) {
  let lo = 0;
  let hi = sorted.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < value) lo = mid + 1;
    else {
      if (sorted[mid] === value) found = mid;
      hi = mid - 1;
    }
  }
  return found;
}

const withCopies = [1, 2, 2, 2, 2, 2, 3, 4];
console.log('plain search lands on index', binarySearch(withCopies, 2).index, '- the first 2 is at', withCopies.indexOf(2));

let mismatches = 0;
for (let n = 1; n <= 60; n++) {
  const sorted = Array.from({ length: n }, (_, i) => Math.floor(i / 3));
  for (let v = -1; v <= n / 3 + 1; v++) {
    if (firstIndex(sorted, v) !== sorted.indexOf(v)) mismatches++;
  }
}
if (mismatches > 0) throw new Error(mismatches + ' lists disagree with a linear scan');
console.log('firstIndex agrees with a linear scan on lists with repeated values');
`

const feynmanTeachBack = `## 4. Teach it back

Binary search keeps two ends of the part of a sorted list where the value could still be, and each look at the middle throws half of that part away, so n elements need at most ⌊log₂ n⌋ + 1 looks. It needs the list sorted, and when a value repeats it finds *a* copy; to find the first copy, keep halving to the left after a match.

Now do the same for your concept: rewrite section 1, make every claim an assertion in section 2, and write down in section 3 what the failed checks taught you.`
