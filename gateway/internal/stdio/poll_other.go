//go:build !unix

package stdio

import "io"

// pollable leaves r as it is: see poll_unix.go.
func pollable(r io.Reader) (io.Reader, func()) { return r, func() {} }
