package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/rlm"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// SamplingOptions configure the features that call a model through the
// client with sampling/createMessage: critique and RLM (seed 004, Phase 3).
// The zero value uses the defaults.
type SamplingOptions struct {
	// CritiqueContext is how many thoughts before the critiqued one are
	// sent with it (default 5).
	CritiqueContext int
	// RLM limits RLM runs: 12 iterations, 5 s per block and so on unless
	// set (see rlm.Options). OnStep is the gateway's own and is ignored.
	RLM rlm.Options
}

// DefaultCritiqueContext is the default of SamplingOptions.CritiqueContext.
const DefaultCritiqueContext = 5

// The model preferences of seed 000 ("Sampling Handler"): a strong model,
// cost a lesser concern. The hint is a preference; the client chooses.
const (
	preferredModel       = "claude-sonnet-4-5-20250929"
	intelligencePriority = 0.9
	costPriority         = 0.3
)

func modelPreferences() *mcp.ModelPreferences {
	return &mcp.ModelPreferences{
		Hints:                []*mcp.ModelHint{{Name: preferredModel}},
		IntelligencePriority: intelligencePriority,
		CostPriority:         costPriority,
	}
}

// errSamplingNotSupported is the cause of a SAMPLING_NOT_SUPPORTED problem:
// the client did not advertise sampling, or answered it with "method not
// found".
var errSamplingNotSupported = errors.New("the client does not support sampling")

// sampled is a model's text answer.
type sampled struct {
	text, model string
}

// sample sends one sampling/createMessage request to the client and
// returns the text of the answer.
func (c *call) sample(ctx context.Context, params *mcp.CreateMessageParams) (sampled, error) {
	if c.session == nil {
		return sampled{}, fmt.Errorf("%w (no MCP session)", errSamplingNotSupported)
	}
	if ip := c.session.InitializeParams(); ip == nil || ip.Capabilities == nil || ip.Capabilities.Sampling == nil {
		return sampled{}, fmt.Errorf("%w: it did not advertise the sampling capability in initialize", errSamplingNotSupported)
	}
	res, err := c.session.CreateMessage(ctx, params)
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Code == jsonrpc.CodeMethodNotFound {
			return sampled{}, fmt.Errorf("%w: it answered sampling/createMessage with method not found (-32601)", errSamplingNotSupported)
		}
		return sampled{}, fmt.Errorf("sampling/createMessage: %w", err)
	}
	tc, ok := res.Content.(*mcp.TextContent)
	if !ok {
		return sampled{}, fmt.Errorf("sampling/createMessage: the model answered with %s content, not text", contentKind(res.Content))
	}
	if strings.TrimSpace(tc.Text) == "" {
		return sampled{}, errors.New("sampling/createMessage: the model's answer is empty")
	}
	model := strings.TrimSpace(res.Model)
	if model == "" {
		model = "unknown model"
	}
	return sampled{text: tc.Text, model: model}, nil
}

func contentKind(c mcp.Content) string {
	switch c.(type) {
	case nil:
		return "no"
	case *mcp.ImageContent:
		return "image"
	case *mcp.AudioContent:
		return "audio"
	}
	return fmt.Sprintf("%T", c)
}

// samplingProblem reports why a sampling feature produced nothing (or not
// everything) for a thought that was nevertheless recorded. It is part of
// a successful reply, not an isError result: the thought is stored.
func samplingProblem(feature string, thoughtNumber int, err error) *ledger.Error {
	details := map[string]any{"thoughtNumber": thoughtNumber, "feature": feature}
	var je *jsonrpc.Error
	switch {
	case errors.Is(err, errSamplingNotSupported):
		e := ledger.Errorf(ledger.CodeSamplingNotSupported, "thought %d was recorded without %s: %v", thoughtNumber, feature, err)
		e.Details = details
		return e
	case errors.As(err, &je):
		details["jsonrpcCode"] = je.Code
	}
	code := ledger.CodeInternal
	if c := ledger.CodeOf(err); c == ledger.CodeStorage {
		code = c
	}
	e := ledger.Errorf(code, "thought %d was recorded, but %s failed: %v", thoughtNumber, feature, err)
	e.Details = details
	return e
}

// modelAuthor is who a model's contribution is attributed to in Git.
func modelAuthor(model string) ledger.Author {
	var b strings.Builder
	for _, r := range strings.ToLower(model) {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	slug := strings.Trim(b.String(), "-.")
	if slug == "" {
		slug = "model"
	}
	return ledger.Author{Name: model, Email: slug + "@models.thoughtbox.invalid"}
}
