package gitstore

import "context"

type fullVerifyKey struct{}

// WithFullVerify marks a context so that Verify rebuilds and hashes every
// version of every object it reaches, as git fsck does, instead of taking
// packed deltas through their checked base. It costs the square of a
// session's length; it checks what the pack's writer computed (each
// object id), where the default check relies on the index's CRC-32 for
// that and looks for damage since.
func WithFullVerify(ctx context.Context) context.Context {
	return context.WithValue(ctx, fullVerifyKey{}, true)
}

func fullVerify(ctx context.Context) bool { return ctx.Value(fullVerifyKey{}) != nil }
