package gateway

import (
	"context"
	"strings"

	"github.com/thoughtbox/thoughtbox/gateway/content"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// The mental_models sub-operations (seed 000).
const (
	getModel   = "get_model"
	listModels = "list_models"
	listTags   = "list_tags"
)

// mentalModelOps are the mental_models sub-operations (seed 000). Each
// accepts the arguments of the others and ignores them, as the operation
// always has.
var mentalModelOps = []subOp{
	sub(getModel, getMentalModel),
	sub(listModels, listMentalModels),
	sub(listTags, listMentalModelTags),
}

// mentalModelsOp runs a mental_models sub-operation.
func mentalModelsOp(ctx context.Context, c *call) (any, error) {
	return runSubOp(ctx, c)
}

// getModelParams: model (seed 002's name for the id) is accepted as an
// alias of modelId.
type getModelParams struct {
	ModelID string `json:"modelId" jsonschema:"The model, for get_model (e.g. five-whys)."`
	Model   string `json:"model,omitempty" jsonschema:"Alias of modelId." schema:"alias"`
	Tag     string `json:"tag,omitempty" jsonschema:"Only models with this tag, for list_models." schema:"ignored"`
}

func (p *getModelParams) check() error {
	if err := alias(&p.ModelID, p.Model, "modelId", "model"); err != nil {
		return err
	}
	if p.ModelID == "" {
		return ledger.InvalidField("modelId", "is required for get_model; one of %s", strings.Join(modelNames(), ", "))
	}
	return nil
}

type listModelsParams struct {
	Tag     string `json:"tag,omitempty"`
	ModelID string `json:"modelId,omitempty" schema:"ignored"`
	Model   string `json:"model,omitempty" schema:"ignored"`
}

func (p *listModelsParams) check() error { return alias(&p.ModelID, p.Model, "modelId", "model") }

type listTagsParams struct {
	ModelID string `json:"modelId,omitempty" schema:"ignored"`
	Model   string `json:"model,omitempty" schema:"ignored"`
	Tag     string `json:"tag,omitempty" schema:"ignored"`
}

func (p *listTagsParams) check() error { return alias(&p.ModelID, p.Model, "modelId", "model") }

// alias folds an alternative argument name into the canonical one.
func alias(canonical *string, other, name, otherName string) error {
	switch {
	case other == "":
	case *canonical == "":
		*canonical = other
	case *canonical != other:
		return ledger.InvalidField(otherName, "is another name for %s and disagrees with it (%q vs %q); give one", name, other, *canonical)
	}
	return nil
}

func modelNames() []string {
	var out []string
	for _, m := range content.Models() {
		out = append(out, m.Name)
	}
	return out
}

// modelSummary is a model in list_models (seed 002, ListModelsResponse).
type modelSummary struct {
	Name        string   `json:"name"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
}

type listModelsReply struct {
	Models []modelSummary `json:"models"`
	Count  int            `json:"count"`
	Filter *string        `json:"filter"`
	// Domain is set when the filter came from the connection's domain.
	Domain string `json:"domain,omitempty"`
}

// getModelReply is seed 002's GetModelResponse.
type getModelReply struct {
	Name        string   `json:"name"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Content     string   `json:"content"`
}

type listTagsReply struct {
	Tags  []tagInfo `json:"tags"`
	Count int       `json:"count"`
}

type tagInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

func getMentalModel(_ context.Context, _ *call, p *getModelParams) (any, error) {
	m, ok := content.Model(p.ModelID)
	if !ok {
		e := ledger.InvalidField("modelId", "unknown mental model %q; one of %s", p.ModelID, strings.Join(modelNames(), ", "))
		e.Details["models"] = modelNames()
		return nil, e
	}
	return &getModelReply{Name: m.Name, Title: m.Title, Description: m.Description, Tags: m.Tags, Content: m.Content}, nil
}

func listMentalModelTags(context.Context, *call, *listTagsParams) (any, error) {
	r := &listTagsReply{Tags: []tagInfo{}}
	for _, t := range content.Tags() {
		r.Tags = append(r.Tags, tagInfo{t.Name, t.Description})
	}
	r.Count = len(r.Tags)
	return r, nil
}

func listMentalModels(_ context.Context, c *call, p *listModelsParams) (any, error) {
	r := &listModelsReply{Models: []modelSummary{}}
	filter := p.Tag
	if filter != "" {
		if _, ok := knownTag(filter); !ok {
			e := ledger.InvalidField("tag", "unknown tag %q; one of %s", filter, strings.Join(tagNames(), ", "))
			e.Details["tags"] = tagNames()
			return nil, e
		}
	} else if tag, ok := c.domainTag(); ok {
		filter, r.Domain = tag, c.domain
	}
	for _, m := range content.Models() {
		if filter == "" || hasTag(m.Tags, filter) {
			r.Models = append(r.Models, modelSummary{m.Name, m.Title, m.Description, m.Tags})
		}
	}
	r.Count = len(r.Models)
	if filter != "" {
		r.Filter = &filter
	}
	return r, nil
}

// domainTag is the mental-model tag of the connection's domain, at stage 3.
func (c *conn) domainTag() (string, bool) {
	if c.stage < StageDomainActive || c.domain == "" {
		return "", false
	}
	return knownTag(c.domain)
}

func knownTag(s string) (string, bool) {
	for _, t := range content.Tags() {
		if strings.EqualFold(t.Name, s) {
			return t.Name, true
		}
	}
	return "", false
}

func tagNames() []string {
	var out []string
	for _, t := range content.Tags() {
		out = append(out, t.Name)
	}
	return out
}

func hasTag(tags []string, tag string) bool {
	for _, t := range tags {
		if strings.EqualFold(t, tag) {
			return true
		}
	}
	return false
}

func describeMentalModelsTool(c *conn) string {
	d := "Structured reasoning frameworks. operation: get_model {modelId} for a model's full prompt, list_models {tag?} to browse, list_tags for the categories."
	if tag, ok := c.domainTag(); ok {
		d += " Your domain is " + c.domain + ": list_models shows the " + tag + " models unless you give another tag."
	}
	return d
}
