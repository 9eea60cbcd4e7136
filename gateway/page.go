package gateway

import (
	"fmt"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// pageArgs are the limit and offset of a list that the store reads whole
// anyway (notes, notebooks, deleted sessions): paging bounds the reply,
// as session list and knowledge list do.
type pageArgs struct {
	Limit  *int `json:"limit,omitempty" jsonschema:"For a list: how many at most (1-100, default 20)." schema:"note=1-100, 20"`
	Offset int  `json:"offset,omitempty" jsonschema:"For a list: how many to skip."`
}

func (p *pageArgs) check() error {
	if p.Offset < 0 {
		return ledger.InvalidField("offset", "must be at least 0, got %d", p.Offset)
	}
	return checkLimit(p.Limit)
}

// pageInfo is what a paged reply says besides its items.
type pageInfo struct {
	Total   int    `json:"total"`
	Offset  int    `json:"offset"`
	Limit   int    `json:"limit"`
	HasMore bool   `json:"hasMore"`
	Hint    string `json:"hint,omitempty"`
}

// pageOf cuts the page p asks for out of all; what is the call to name
// in the hint for the next page.
func pageOf[T any](all []T, p pageArgs, what string) ([]T, pageInfo) {
	limit := ledger.DefaultListLimit
	if p.Limit != nil {
		limit = *p.Limit
	}
	page := all[min(p.Offset, len(all)):]
	page = page[:min(limit, len(page))]
	info := pageInfo{Total: len(all), Offset: p.Offset, Limit: limit}
	if end := min(p.Offset, len(all)) + len(page); end < len(all) {
		info.HasMore = true
		info.Hint = fmt.Sprintf("%d more: call %s again with offset %d", len(all)-end, what, end)
	}
	return page, info
}
