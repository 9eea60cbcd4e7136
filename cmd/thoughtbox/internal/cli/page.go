package cli

import (
	"fmt"
	"io"
)

// pageFlags are --limit and --offset of a listing that can grow long
// (notes, notebooks, projects).
type pageFlags struct {
	Limit  int `default:"50" placeholder:"N" help:"Show at most N (1 to 10000)."`
	Offset int `placeholder:"N" help:"Skip the first N."`
}

// Validate checks the flags' values (exit 2).
func (p *pageFlags) Validate() error { return checkPage(p.Limit, p.Offset, 10000) }

// cut returns the page of a list of n items as the bounds [from, to).
func (p pageFlags) cut(n int) (from, to int) {
	from = min(p.Offset, n)
	return from, min(n, from+p.Limit)
}

// more tells on w how to see the rest when the page did not reach the
// end of the list.
func (p pageFlags) more(w io.Writer, shown, total int, what string) {
	if end := p.Offset + shown; end < total {
		fmt.Fprintf(w, "%d of %d %s shown; --offset %d shows more\n", shown, total, what, end)
	}
}
