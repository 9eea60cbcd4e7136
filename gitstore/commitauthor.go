package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// CommitAuthor reads who recorded a commit and when, from the commit's
// author line: the agent for a thought, the model for a critique. The
// ledger does not keep authors in its view (nothing but the Observatory's
// detail panel asks for them), so they are read from Git on demand.
func (s *Store) CommitAuthor(ctx context.Context, id ledger.CommitID) (ledger.Author, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return ledger.Author{}, time.Time{}, err
	}
	h, err := object.ParseHash(string(id))
	if err != nil {
		return ledger.Author{}, time.Time{}, err
	}
	data, err := s.readTyped(h, typeCommit)
	if err != nil {
		return ledger.Author{}, time.Time{}, err
	}
	return parseAuthorLine(data)
}

// parseAuthorLine finds "author Name <email> seconds +hhmm" in a commit's
// header.
func parseAuthorLine(data []byte) (ledger.Author, time.Time, error) {
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl <= 0 {
			break // end of the header, or a truncated commit
		}
		line := data[:nl]
		data = data[nl+1:]
		rest, ok := bytes.CutPrefix(line, []byte("author "))
		if !ok {
			continue
		}
		lt := bytes.IndexByte(rest, '<')
		gt := bytes.LastIndexByte(rest, '>')
		if lt < 0 || gt < lt {
			return ledger.Author{}, time.Time{}, fmt.Errorf("malformed author line %q", line)
		}
		a := ledger.Author{Name: string(bytes.TrimSpace(rest[:lt])), Email: string(rest[lt+1 : gt])}
		fields := bytes.Fields(rest[gt+1:])
		if len(fields) < 1 {
			return a, time.Time{}, nil
		}
		secs, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil {
			return a, time.Time{}, fmt.Errorf("malformed author time in %q", line)
		}
		when := time.Unix(secs, 0).UTC()
		if len(fields) > 1 && len(fields[1]) == 5 {
			tz := string(fields[1])
			hh, err1 := strconv.Atoi(tz[1:3])
			mm, err2 := strconv.Atoi(tz[3:5])
			if err1 == nil && err2 == nil {
				off := hh*3600 + mm*60
				if tz[0] == '-' {
					off = -off
				}
				when = when.In(time.FixedZone(tz, off))
			}
		}
		return a, when, nil
	}
	return ledger.Author{}, time.Time{}, fmt.Errorf("commit has no author line")
}
