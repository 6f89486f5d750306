package storage

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestStorageErrorGivesEachEtcdFailureItsStatus(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		code    int32
		message string
	}{
		{"a cancelled request is a timeout", context.DeadlineExceeded, http.StatusGatewayTimeout, "did not complete within requested timeout"},
		{"an object over etcd's limit is 413", rpctypes.ErrRequestTooLarge, http.StatusRequestEntityTooLarge, "too large"},
		{"the NOSPACE alarm says writes are refused until space is freed", rpctypes.ErrNoSpace, http.StatusInternalServerError, "writes are refused until disk space is freed"},
		{"the NOSPACE alarm through gRPC's text is recognised too", fmt.Errorf("rpc error: %s", rpctypes.ErrNoSpace.Error()), http.StatusInternalServerError, "NOSPACE alarm"},
		{"anything else is an internal error", fmt.Errorf("boom"), http.StatusInternalServerError, "storage: boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := storageError(c.err).(apierrors.APIStatus).Status()
			if st.Code != c.code || !strings.Contains(st.Message, c.message) {
				t.Fatalf("got %d %q, want %d containing %q", st.Code, st.Message, c.code, c.message)
			}
			// No Retry-After hint: client-go would resend the request
			// up to ten times, each waiting out the whole timeout.
			if st.Details != nil && st.Details.RetryAfterSeconds != 0 {
				t.Errorf("retryAfterSeconds %d, want none", st.Details.RetryAfterSeconds)
			}
		})
	}
}
