// Package content holds the prose Thoughtbox ships to agents: the fifteen
// mental models, the static Markdown resources (init guide, architecture,
// cipher guide, patterns cookbook, session analysis guide and the two
// self-tests) and the MCP prompts.
//
// Everything is Markdown embedded in the binary with //go:embed, so the
// package does no I/O at run time; the gateway serves what it returns.
//
//	m, ok := content.Model("five-whys")      // a model's full prompt text
//	guide, _ := content.Resource("cipher")   // thoughtbox://cipher
//	for _, p := range content.Prompts() { … } // prompts/list
package content

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"sync"
)

//go:embed models/*.md resources/*.md resources/tests/*.md prompts/*.md
var files embed.FS

// MentalModel is one structured reasoning framework (seed 002, MentalModel).
// Name is its id ("five-whys"); Content is the full prompt text in Markdown.
type MentalModel struct {
	Name, Title, Description string
	Tags                     []string
	Content                  string
}

// Tag groups mental models by the kind of problem they help with.
type Tag struct {
	Name, Description string
}

// modelInfo is a catalog row; the prompt text lives in models/<name>.md.
type modelInfo struct {
	name, title, description string
	tags                     []string
}

// catalog is the mental models catalog of seed 000, in its order.
var catalog = []modelInfo{
	{"rubber-duck", "Rubber Duck Debugging", "Explain the problem step by step to a listener who knows nothing, and find the bug where the explanation stops holding.", []string{"debugging"}},
	{"five-whys", "Five Whys", "Follow a symptom back through a chain of verified causes until you reach one you can fix so it does not recur.", []string{"debugging", "problem-solving"}},
	{"pre-mortem", "Pre-Mortem Analysis", "Assume the plan has already failed, write down why, and change the plan before reality does it for you.", []string{"planning", "risk-management"}},
	{"steelmanning", "Steelmanning", "Build the strongest honest case for the option you lean against before you decide.", []string{"decision-making"}},
	{"fermi-estimation", "Fermi Estimation", "Estimate an unknown quantity by splitting it into factors you can guess within a range, then check the order of magnitude.", []string{"planning", "analysis"}},
	{"trade-off-matrix", "Trade-off Matrix", "Score options against weighted criteria, then test whether the winner survives reasonable changes in the weights.", []string{"decision-making"}},
	{"decomposition", "Problem Decomposition", "Split a large problem into parts small enough to act on, solve them, and put the answers back together.", []string{"planning", "problem-solving"}},
	{"inversion", "Inversion", "Ask what would guarantee failure, then turn each answer into something to avoid or guard against.", []string{"decision-making", "risk-management"}},
	{"abstraction-laddering", "Abstraction Laddering", "Climb up with \"why?\" and down with \"how?\" to find the level at which a problem is worth solving.", []string{"problem-solving", "analysis"}},
	{"constraint-relaxation", "Constraint Relaxation", "Drop one constraint at a time to see which solutions it was hiding, then bring the constraint back and adapt.", []string{"problem-solving"}},
	{"assumption-surfacing", "Assumption Surfacing", "List what must be true for a plan or claim to hold, rank those beliefs by risk, and test the riskiest.", []string{"analysis"}},
	{"adversarial-thinking", "Adversarial Thinking", "Attack your own system as a malicious, careless or unlucky party would, and fix what breaks.", []string{"risk-management"}},
	{"time-horizon-shifting", "Time Horizon Shifting", "Look at one decision from several distances in time and make the trade between them explicit.", []string{"planning", "decision-making"}},
	{"impact-effort-grid", "Impact-Effort Grid", "Place candidate tasks on a two-by-two of impact and effort to decide what to do first and what to drop.", []string{"planning", "decision-making"}},
	{"opportunity-cost", "Opportunity Cost", "Price a choice by the best alternative use of the same time, money or attention.", []string{"decision-making"}},
}

// tags are the six tags of seed 002, in the catalog's order of first use.
var tags = []Tag{
	{"debugging", "Something behaves differently from what you expect and you need the cause, not a workaround: failing tests, wrong output, errors you cannot explain."},
	{"planning", "Before committing to work: shaping it, sizing it, ordering it and seeing early what could derail it."},
	{"decision-making", "Choosing between options that each cost something: comparing alternatives, weighing criteria, deciding what to give up."},
	{"risk-management", "Asking what can go wrong, how likely and how bad it is, and which guards or early warnings are worth their price."},
	{"problem-solving", "You are stuck or the problem is badly framed: reframe it, split it, trace it to its cause or loosen what boxes it in."},
	{"analysis", "Understanding a claim, a system or a number: exposing hidden beliefs, estimating quantities, moving between detail and big picture."},
}

// models is the catalog joined with its embedded prompt texts. A missing file
// is a build defect, caught by the package's tests, so it panics.
var models = sync.OnceValue(func() []MentalModel {
	out := make([]MentalModel, len(catalog))
	for i, c := range catalog {
		b, err := files.ReadFile("models/" + c.name + ".md")
		if err != nil {
			panic(fmt.Sprintf("content: mental model %q: %v", c.name, err))
		}
		out[i] = MentalModel{Name: c.name, Title: c.title, Description: c.description, Tags: c.tags, Content: string(b)}
	}
	return out
})

// Models returns the fifteen mental models in catalog order. The slice and
// the Tags slices are the caller's to keep or change.
func Models() []MentalModel {
	ms := models()
	out := make([]MentalModel, len(ms))
	for i, m := range ms {
		out[i] = copyModel(m)
	}
	return out
}

// Model returns the mental model with the given id ("five-whys").
func Model(name string) (MentalModel, bool) {
	for _, m := range models() {
		if m.Name == name {
			return copyModel(m), true
		}
	}
	return MentalModel{}, false
}

func copyModel(m MentalModel) MentalModel {
	m.Tags = append([]string(nil), m.Tags...)
	return m
}

// Tags returns the six model tags, each with when to reach for its models.
func Tags() []Tag {
	return append([]Tag(nil), tags...)
}

// resourceNames are the static Markdown resources, served as
// thoughtbox://<name>; each lives in resources/<name>.md.
var resourceNames = []string{
	"init",
	"architecture",
	"cipher",
	"patterns-cookbook",
	"session-analysis-guide",
	"tests/thoughtbox",
	"tests/knowledge",
}

// Resource returns the Markdown of the static resource thoughtbox://<name>,
// for the names "init", "architecture", "cipher", "patterns-cookbook",
// "session-analysis-guide", "tests/thoughtbox" and "tests/knowledge".
func Resource(name string) (string, bool) {
	for _, n := range resourceNames {
		if n == name {
			b, err := fs.ReadFile(files, "resources/"+name+".md")
			if err != nil {
				return "", false
			}
			return string(b), true
		}
	}
	return "", false
}

// mustResource is for templates that embed a resource known to exist.
func mustResource(name string) (string, error) {
	s, ok := Resource(name)
	if !ok {
		return "", fmt.Errorf("content: no resource %q", name)
	}
	return strings.TrimSpace(s), nil
}
