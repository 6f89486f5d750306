package server

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestLogRequestReadsPodLogOptions(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		query string
		check func(t *testing.T, tail, limit, since int64, follow, timestamps bool)
		err   string
	}{
		{"defaults: everything, no limit", "", func(t *testing.T, tail, limit, since int64, follow, ts bool) {
			if tail != -1 || limit != 0 || since != 0 || follow || ts {
				t.Errorf("tail %d limit %d since %d follow %v timestamps %v", tail, limit, since, follow, ts)
			}
		}, ""},
		{"every option", "follow=true&timestamps=true&tailLines=3&limitBytes=100&sinceSeconds=60",
			func(t *testing.T, tail, limit, since int64, follow, ts bool) {
				if tail != 3 || limit != 100 || since != now.Add(-time.Minute).UnixNano() || !follow || !ts {
					t.Errorf("tail %d limit %d since %d follow %v timestamps %v", tail, limit, since, follow, ts)
				}
			}, ""},
		{"sinceTime as kubectl sends it", "sinceTime=2026-01-01T11:00:00Z", func(t *testing.T, _, _, since int64, _, _ bool) {
			if since != now.Add(-time.Hour).UnixNano() {
				t.Errorf("since %v", time.Unix(0, since))
			}
		}, ""},
		{"both since options are refused", "sinceSeconds=5&sinceTime=2026-01-01T11:00:00Z", nil, "at most one of"},
		{"a zero byte limit is refused", "limitBytes=0", nil, "limitBytes"},
		{"a negative tail is refused", "tailLines=-1", nil, "tailLines"},
		{"a bad time is refused", "sinceTime=yesterday", nil, "sinceTime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			req, err := logRequest(q, now)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one about %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, req.TailLines, req.LimitBytes, req.SinceTime, req.Follow, req.Timestamps)
		})
	}
}
