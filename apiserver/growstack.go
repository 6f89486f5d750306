package apiserver

import "sync/atomic"

// growStackFrame is the frame growStack takes. A request's goroutine
// (one per request, from net/http) starts with a small stack and the
// serving path (router, admission, field tracking, storage, the etcd
// call) needs about 32 KiB; left alone, the runtime grows it in
// doublings at whatever depth runs out, each time copying every frame
// already on it, which BenchmarkCreatePod profiled at about 5% of the
// CPU of a create. One large frame at the top grows it once, while the
// stack holds a few frames.
const growStackFrame = 16 << 10

// growStackIndex is read at run time, so that the compiler keeps the
// frame.
var growStackIndex atomic.Uint32

// growStack grows the calling goroutine's stack to fit the serving path
// (the trick CockroachDB's growstack package uses).
//
//go:noinline
func growStack() byte {
	var frame [growStackFrame]byte
	return frame[growStackIndex.Load()%growStackFrame]
}
