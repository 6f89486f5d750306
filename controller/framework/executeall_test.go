package framework

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

type step string

func (s step) String() string { return string(s) }

func TestExecuteAllGoesPastFailures(t *testing.T) {
	sink := &FakeSink[step]{Fail: func(s step) error {
		if strings.HasPrefix(string(s), "bad") {
			return errors.New("refused")
		}
		return nil
	}}
	err := ExecuteAll(context.Background(), sink, []step{"a", "bad1", "b", "bad2"})
	if got := sink.Done(); !slices.Equal(got, []step{"a", "b"}) {
		t.Errorf("done %v, want [a b]: a failure must not stop the rest", got)
	}
	if err == nil || !strings.Contains(err.Error(), "bad1: refused") || !strings.Contains(err.Error(), "bad2: refused") {
		t.Errorf("error %v, want both failures named", err)
	}
	if err := ExecuteAll(context.Background(), sink, nil); err != nil {
		t.Errorf("no actions: error %v", err)
	}
}
