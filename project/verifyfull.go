package project

import (
	"context"

	"github.com/thoughtbox/thoughtbox/gitstore"
)

// WithFullVerify is gitstore.WithFullVerify, for the CLI's verify --full.
func WithFullVerify(ctx context.Context) context.Context { return gitstore.WithFullVerify(ctx) }
