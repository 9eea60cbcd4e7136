package remote_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// BenchmarkShare1kSessions pushes a ledger of 1,000 sessions (5 thoughts
// each) to an empty bare repository, then clones it into an empty ledger:
// one op is one push and one pull, with git-receive-pack/git-upload-pack
// serving the path.
//
//	go test ./gitstore/ -run '^$' -bench Share1k -benchtime 3x
func BenchmarkShare1kSessions(b *testing.B) {
	ctx := context.Background()
	src, err := gitstore.Open(filepath.Join(b.TempDir(), "src.git"), gitstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	l := ledger.New(src, ledger.Options{})
	for i := 0; i < 1000; i++ {
		s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: fmt.Sprintf("question %d", i)}, ledger.Author{Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		for k := 1; k <= 5; k++ {
			if _, err := l.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: fmt.Sprintf("step %d of question %d, with a few more words", k, i), NextThoughtNeeded: k < 5}, ledger.Author{Name: "bench"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	var pushTime, pullTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		bare := filepath.Join(b.TempDir(), "remote.git")
		if _, err := gogit.PlainInit(bare, true); err != nil {
			b.Fatal(err)
		}
		dst, err := gitstore.Open(filepath.Join(b.TempDir(), "dst.git"), gitstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		pr, err := remote.Push(ctx, src, bare, remote.TransferOptions{})
		if err != nil {
			b.Fatal(err)
		}
		pushTime += time.Since(t0)
		t0 = time.Now()
		res, err := remote.Pull(ctx, dst, bare, remote.TransferOptions{})
		pullTime += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if len(res.Created) != 1000 {
			b.Fatalf("cloned %d refs, want 1000", len(res.Created))
		}
		b.ReportMetric(float64(pr.Bytes)/1e6, "MB-pushed")
		dst.Close()
		b.StartTimer()
	}
	b.ReportMetric(pushTime.Seconds()/float64(b.N), "s-push")
	b.ReportMetric(pullTime.Seconds()/float64(b.N), "s-pull")
}
