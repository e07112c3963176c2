package etcd

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-dev/switchboard/store"
)

// A commit that ran out of time may have reached etcd: its outcome is
// unknown, and said so (issue 38: a 503 "nothing was changed" for a
// server that existed afterwards); a commit refused on the way (no
// connection) changed nothing. Both are the store being out of reach.
func TestACommitsUnknownOutcomeIsSaid(t *testing.T) {
	for _, c := range []struct {
		err     error
		unknown bool
	}{
		{context.DeadlineExceeded, true},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), true},
		{status.Error(codes.Unavailable, "connection refused"), false},
		{context.Canceled, false},
	} {
		got := commitFailed(c.err)
		if !errors.Is(got, store.ErrUnavailable) || errors.Is(got, store.ErrOutcomeUnknown) != c.unknown {
			t.Errorf("commitFailed(%v) = %v; want unavailable, outcome unknown %v", c.err, got, c.unknown)
		}
	}
}
