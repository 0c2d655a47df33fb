package journal

import (
	"context"
	"testing"
)

type ctxKey struct{}

// The commit a CommitNow forces runs with that caller's context values
// (its trace span), without its cancellation; a timer's commit runs with
// none.
func TestCommitNow_PassesContextValues(t *testing.T) {
	got := make(chan context.Context, 4)
	j, _ := openTest(t, Options{Commit: func(ctx context.Context, _ Transid) error {
		got <- ctx
		return nil
	}})
	h := mustStart(t, j)
	h.End()
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "fsync span"))
	if _, err := j.CommitNow(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	c := <-got
	if v, _ := c.Value(ctxKey{}).(string); v != "fsync span" {
		t.Fatalf("commit context value %q, want the caller's", v)
	}
	if c.Err() != nil {
		t.Fatalf("commit context is cancelled with its caller: %v", c.Err())
	}
}
