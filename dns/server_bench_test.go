package dns

import (
	"log/slog"
	"net"
	"testing"

	miekg "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
)

// discardWriter is a ResponseWriter that drops what it is given.
type discardWriter struct{ n int }

func (w *discardWriter) LocalAddr() net.Addr       { return &net.UDPAddr{} }
func (w *discardWriter) RemoteAddr() net.Addr      { return &net.UDPAddr{} }
func (w *discardWriter) WriteMsg(*miekg.Msg) error { return nil }
func (w *discardWriter) Write(b []byte) (int, error) {
	w.n += len(b)
	return len(b), nil
}
func (w *discardWriter) Close() error        { return nil }
func (w *discardWriter) TsigStatus() error   { return nil }
func (w *discardWriter) TsigTimersOnly(bool) {}
func (w *discardWriter) Hijack()             {}
func (w *discardWriter) Network() string     { return "udp" }

// BenchmarkServeDNS measures the answer path alone (no sockets): what a
// question costs the handler, allocations included.
func BenchmarkServeDNS(b *testing.B) {
	s := newTestStore()
	s.UpsertService(makeService("default", "web").IPs("10.96.0.20").Port("http", 80, corev1.ProtocolTCP).Obj())
	s.UpsertService(makeService("default", "db").Headless().Port("pg", 5432, corev1.ProtocolTCP).Obj())
	s.UpsertSlice(makeSlice("default", "db-1", "db").Port("pg", 5432, corev1.ProtocolTCP).Ready("db-0", "10.244.0.1").Ready("db-1", "10.244.0.2").Obj())
	srv := NewServer(ServerConfig{Store: s, Logger: slog.New(slog.DiscardHandler)})
	for _, q := range []struct {
		name  string
		qname string
		qtype uint16
	}{
		{"ClusterIP A", "web.default.svc.cluster.local.", miekg.TypeA},
		{"headless A", "db.default.svc.cluster.local.", miekg.TypeA},
		{"SRV", "_pg._tcp.db.default.svc.cluster.local.", miekg.TypeSRV},
		{"NXDOMAIN", "nope.default.svc.cluster.local.", miekg.TypeA},
	} {
		b.Run(q.name, func(b *testing.B) {
			req := new(miekg.Msg).SetQuestion(q.qname, q.qtype)
			w := &discardWriter{}
			b.ReportAllocs()
			for b.Loop() {
				srv.ServeDNS(w, req)
			}
		})
	}
}
