package apiserver

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// maxBodyBytes is the largest request body accepted (Kubernetes' limit).
const maxBodyBytes = 3 << 20

// toStatus maps any error to a Kubernetes Status. This is the one place
// where errors become HTTP codes. The Status is complete: kind,
// apiVersion, status, a reason for its code and details (empty rather
// than absent: clients such as kubectl debug read them unchecked).
func toStatus(err error) *metav1.Status {
	var st metav1.Status
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		st = apiStatus.Status()
	} else {
		st = apierrors.NewInternalError(err).Status()
	}
	st.Kind, st.APIVersion = "Status", "v1"
	st.Status = metav1.StatusFailure
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	if st.Reason == "" {
		st.Reason = reasonForCode(int(st.Code))
	}
	if st.Details == nil {
		st.Details = &metav1.StatusDetails{}
	}
	return &st
}

// reasonForCode is the reason Kubernetes gives a code when nothing more
// precise is known (as apimachinery's NewGenericServerResponse).
func reasonForCode(code int) metav1.StatusReason {
	switch code {
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusMethodNotAllowed:
		return metav1.StatusReasonMethodNotAllowed
	case http.StatusNotAcceptable:
		return metav1.StatusReasonNotAcceptable
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusGone:
		return metav1.StatusReasonGone
	case http.StatusRequestEntityTooLarge:
		return metav1.StatusReasonRequestEntityTooLarge
	case http.StatusUnsupportedMediaType:
		return metav1.StatusReasonUnsupportedMediaType
	case http.StatusUnprocessableEntity:
		return metav1.StatusReasonInvalid
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	}
	if code >= 500 {
		return metav1.StatusReasonInternalError
	}
	return metav1.StatusReasonUnknown
}

// requestInfoKey carries a resource request's requestInfo in its context,
// so that its errors name the object.
type requestInfoKey struct{}

func withRequestInfo(r *http.Request, ri *requestInfo) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, ri))
}

// writeError answers with the Status for err. An error about a resource
// request that names no object gets the request's: its name, group and
// resource (Kubernetes' details.kind is the resource, as in NotFound).
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	st := toStatus(err)
	if ri, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok && st.Details.Name == "" && st.Details.Kind == "" {
		st.Details.Name = ri.name
		st.Details.Group = ri.handler.res.Group
		st.Details.Kind = ri.handler.res.Resource
	}
	if st.Code >= 500 {
		slog.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		// As kube-apiserver: a suggested delay is also a header.
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	writeObject(w, r, int(st.Code), st)
}

// writeJSON encodes v as the response body with the given code; for
// answers that exist only in JSON (discovery, tables).
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeRaw(w, code, data)
}

func writeRaw(w http.ResponseWriter, code int, data []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// writeObject answers with obj in the encoding the client accepts:
// protobuf, YAML or JSON.
func writeObject(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	if wantsProtobuf(r) {
		data, ok, err := encodeProtobuf(obj)
		if err != nil {
			slog.Error("encoding protobuf response", "path", r.URL.Path, "err", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if ok {
			writeBody(w, r, code, protobufMediaType, data)
			return
		}
	}
	if wantsYAML(r) {
		data, err := json.Marshal(obj)
		if err == nil {
			data, err = yaml.JSONToYAML(data)
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeBody(w, r, code, "application/yaml", data)
		return
	}
	writeJSONBody(w, r, code, obj)
}

// writeJSONBody answers with v as JSON, compressed as writeBody does
// (lists and tables, which can be large).
func writeJSONBody(w http.ResponseWriter, r *http.Request, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeBody(w, r, code, "application/json", data)
}

// gzipThreshold is the body size from which an answer is compressed for
// a client that accepts gzip (kube-apiserver's: 128 KiB; smaller bodies
// cost more to compress than they save).
const gzipThreshold = 128 << 10

// writeBody writes an encoded answer, gzipped when it is large and the
// client accepts gzip (client-go and kubectl do), as kube-apiserver's
// response compression does: a LIST of thousands of pods is a tenth of
// its size on the wire.
func writeBody(w http.ResponseWriter, r *http.Request, code int, contentType string, data []byte) {
	if len(data) < gzipThreshold || !acceptsGzip(r) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(code)
		_, _ = w.Write(data)
		return
	}
	bw := newBodyWriter(w, r, code, contentType)
	_, _ = bw.Write(data)
	_ = bw.Close()
}

// bodyWriter writes a response body that may be written piece by piece
// (a streamed list). For a client that accepts gzip it holds the first
// gzipThreshold bytes back: a body that ends before is sent as it is, a
// longer one is gzipped from its first byte. Once the status line is
// out, an error can no longer be answered as a Status (Started).
type bodyWriter struct {
	w    http.ResponseWriter
	r    *http.Request
	code int
	held []byte
	out  io.Writer // nil until the status line is written
	zw   *gzip.Writer
	// buf gathers small writes (list items) into large ones: each write
	// to an HTTP/2 response is a hand-off to the connection's goroutine.
	buf *bufio.Writer
	err error
}

func newBodyWriter(w http.ResponseWriter, r *http.Request, code int, contentType string) *bodyWriter {
	w.Header().Set("Content-Type", contentType)
	return &bodyWriter{w: w, r: r, code: code}
}

// Started reports whether the status line has been written.
func (b *bodyWriter) Started() bool { return b.out != nil }

func (b *bodyWriter) Write(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.out == nil {
		if !acceptsGzip(b.r) {
			b.start(false)
		} else if b.held = append(b.held, p...); len(b.held) < gzipThreshold {
			return len(p), nil
		} else {
			b.start(true)
			p, b.held = b.held, nil
			if _, b.err = b.out.Write(p); b.err == nil {
				b.err = b.flush() // the first bytes go out now, not when the body ends
			}
			return len(p), b.err
		}
	}
	var n int
	n, b.err = b.out.Write(p)
	return n, b.err
}

func (b *bodyWriter) start(compress bool) {
	b.buf = bufferedWriters.Get().(*bufio.Writer)
	b.buf.Reset(b.w)
	b.out = b.buf
	if compress {
		h := b.w.Header()
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		b.zw = gzipWriters.Get().(*gzip.Writer)
		b.zw.Reset(b.buf)
		b.out = b.zw
	}
	b.w.WriteHeader(b.code)
}

// bufferedWriters are reused across responses.
var bufferedWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// flush sends what the gzip stream and the buffer hold.
func (b *bodyWriter) flush() error {
	if b.zw != nil {
		if err := b.zw.Flush(); err != nil {
			return err
		}
	}
	if err := b.buf.Flush(); err != nil {
		return err
	}
	if f, ok := b.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// Close writes what was held back and ends the gzip stream.
func (b *bodyWriter) Close() error {
	if b.out == nil {
		if len(b.held) < 4<<10 {
			// Small: straight out, without a buffer.
			b.w.WriteHeader(b.code)
			_, b.err = b.w.Write(b.held)
			b.out, b.held = b.w, nil
			return b.err
		}
		b.start(false)
		_, b.err = b.out.Write(b.held)
		b.held = nil
	}
	if b.zw != nil {
		if err := b.zw.Close(); b.err == nil {
			b.err = err
		}
		gzipWriters.Put(b.zw)
		b.zw = nil
	}
	if b.buf != nil {
		if err := b.buf.Flush(); b.err == nil {
			b.err = err
		}
		b.buf.Reset(nil)
		bufferedWriters.Put(b.buf)
		b.buf = nil
	}
	return b.err
}

// gzipWriters are reused: a gzip.Writer holds about 800 KB of state.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
	return zw
}}

// acceptsGzip reads Accept-Encoding: gzip (with a q-value above 0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") || strings.TrimSpace(enc) == "*" {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

func wantsYAML(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return strings.HasPrefix(accept, "application/yaml") && !strings.Contains(accept, "json")
}

// readBody reads a request body, refusing more than maxBodyBytes, and
// converts YAML to JSON. It checks the media type against allowed.
// Protobuf is returned as is if allowed lists it, and converted to JSON
// otherwise.
func readBody(r *http.Request, allowed ...string) ([]byte, string, error) {
	ct := r.Header.Get("Content-Type")
	mediaType := "application/json"
	if ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return nil, "", statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, "invalid Content-Type "+ct)
		}
		mediaType = mt
	}
	ok := false
	if mediaType == protobufMediaType && contains(allowed, "application/json") {
		ok = true // converted to JSON below, unless the caller takes protobuf
	}
	for _, a := range allowed {
		if a == mediaType {
			ok = true
		}
	}
	if !ok {
		return nil, "", statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", strings.Join(allowed, ", ")))
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, "", apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	if len(data) > maxBodyBytes {
		return nil, "", apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", maxBodyBytes))
	}
	if mediaType == protobufMediaType && !contains(allowed, protobufMediaType) {
		if data, err = protobufToJSON(data); err != nil {
			return nil, "", err
		}
		mediaType = "application/json"
	}
	if mediaType == "application/yaml" {
		data, err = yaml.YAMLToJSON(data)
		if err != nil {
			return nil, "", apierrors.NewBadRequest(fmt.Sprintf("invalid YAML: %v", err))
		}
	}
	return data, mediaType, nil
}

// statusError builds an API error for codes apimachinery has no helper for.
func statusError(code int32, reason metav1.StatusReason, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
}
