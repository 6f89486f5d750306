package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	miekg "github.com/miekg/dns"
)

// Message sizes.
const (
	// maxUDPSize caps the EDNS0 buffer size a client may ask for: larger
	// UDP answers would be fragmented. Answers beyond it are truncated
	// (TC set) and the client asks again over TCP.
	maxUDPSize = 4096
	// advertisedUDPSize is the EDNS0 buffer size this server announces,
	// the DNS Flag Day 2020 value.
	advertisedUDPSize = 1232
)

// ServerConfig configures a Server.
type ServerConfig struct {
	// Listen is the UDP and TCP address, "IP:PORT". Port 0 picks a free
	// port (the same for both).
	Listen string
	// Store answers for the cluster zone.
	Store *Store
	// Forwarder answers everything else; nil answers SERVFAIL.
	Forwarder *Forwarder
	// UpstreamTimeout bounds a whole forwarded question, every upstream
	// tried included. Default 5s.
	UpstreamTimeout time.Duration
	// CacheTTL is the longest that upstream's answers are kept. Default
	// 30s (kubeadm's Corefile); negative: no cache.
	CacheTTL time.Duration
	// CacheSize is the most answers kept. Default 10,000.
	CacheSize int
	// Now is the cache's clock. Default time.Now.
	Now func() time.Time
	// MaxForwards caps the questions waiting on upstream at once; more
	// are REFUSED at once, as CoreDNS's forward max_concurrent does, so
	// that a dead upstream cannot pile up goroutines. Default 1000.
	MaxForwards int
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Server answers DNS over UDP and TCP: the cluster zone from its Store,
// everything else through its Forwarder.
type Server struct {
	cfg   ServerConfig
	log   *slog.Logger
	ctx   context.Context // the Serve context, for forwarded questions
	pc    net.PacketConn
	ln    net.Listener
	opt   *miekg.OPT    // the OPT record of answers to EDNS0 questions
	pool  sync.Pool     // *reply
	fwds  chan struct{} // one token per question waiting on upstream
	cache *answerCache  // nil: none
}

// reply is the memory of one answer, reused across questions.
type reply struct {
	ans Answer
	msg miekg.Msg
	buf []byte
}

// NewServer returns a server; Listen, then Serve it.
func NewServer(cfg ServerConfig) *Server {
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxForwards <= 0 {
		cfg.MaxForwards = 1000
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = 30 * time.Second
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 10000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, log: cfg.Logger, ctx: context.Background(), fwds: make(chan struct{}, cfg.MaxForwards)}
	if cfg.CacheTTL > 0 {
		s.cache = newAnswerCache(cfg.CacheTTL, cfg.CacheSize, cfg.Now)
	}
	s.opt = &miekg.OPT{Hdr: miekg.RR_Header{Name: ".", Rrtype: miekg.TypeOPT}}
	s.opt.SetUDPSize(advertisedUDPSize)
	s.pool.New = func() any { return &reply{buf: make([]byte, 0, 1024)} }
	return s
}

// Listen binds the UDP and TCP sockets, so that an address in use fails
// here, before anything else starts.
func (s *Server) Listen() error {
	_, port, _ := net.SplitHostPort(s.cfg.Listen)
	for attempt := 0; ; attempt++ {
		pc, err := net.ListenPacket("udp", s.cfg.Listen)
		if err != nil {
			return fmt.Errorf("dns: listen udp %s: %w", s.cfg.Listen, err)
		}
		// With port 0, TCP takes the port UDP got; another process may
		// hold that TCP port, so a free pair is looked for a few times.
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err != nil {
			pc.Close()
			if port == "0" && attempt < 10 {
				continue
			}
			return fmt.Errorf("dns: listen tcp %s: %w", pc.LocalAddr(), err)
		}
		s.pc, s.ln = pc, ln
		return nil
	}
}

// Addr returns the address the server listens on, once Listen returned.
func (s *Server) Addr() string { return s.pc.LocalAddr().String() }

// Serve answers until ctx is done, then closes the sockets.
func (s *Server) Serve(ctx context.Context) error {
	if s.pc == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	s.ctx = ctx
	udp := &miekg.Server{PacketConn: s.pc, Handler: s, UDPSize: maxUDPSize}
	tcp := &miekg.Server{Listener: s.ln, Handler: s, ReadTimeout: 5 * time.Second, IdleTimeout: func() time.Duration { return 10 * time.Second }}
	errc := make(chan error, 2)
	go func() { errc <- udp.ActivateAndServe() }()
	go func() { errc <- tcp.ActivateAndServe() }()
	s.log.Info("dns serving", "addr", s.Addr(), "zone", s.cfg.Store.Zone(), "upstreams", s.upstreams())
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = errors.Join(err, shutdown(shut, udp), shutdown(shut, tcp))
	return err
}

func shutdown(ctx context.Context, srv *miekg.Server) error {
	if err := srv.ShutdownContext(ctx); err != nil && err.Error() != "dns: server not started" {
		return err
	}
	return nil
}

func (s *Server) upstreams() []string {
	if s.cfg.Forwarder == nil {
		return nil
	}
	return s.cfg.Forwarder.Upstreams()
}

// ServeDNS answers one question: from the store if it is the cluster
// zone's (or a reverse name it knows), else through the forwarder.
func (s *Server) ServeDNS(w miekg.ResponseWriter, req *miekg.Msg) {
	_, tcp := w.RemoteAddr().(*net.TCPAddr)
	r := s.pool.Get().(*reply)
	defer s.pool.Put(r)
	r.ans.Reset()
	m := &r.msg
	*m = miekg.Msg{}
	switch {
	case req.Opcode != miekg.OpcodeQuery:
		m.SetRcode(req, miekg.RcodeNotImplemented)
		s.write(w, req, r, tcp)
		return
	case len(req.Question) != 1:
		m.SetRcodeFormatError(req)
		s.write(w, req, r, tcp)
		return
	}
	q := req.Question[0]
	if q.Qclass != miekg.ClassINET {
		r.ans.Forward = true
	} else {
		s.cfg.Store.Lookup(q.Name, q.Qtype, &r.ans)
	}
	if r.ans.Forward {
		s.forward(w, req, tcp)
		return
	}
	m.SetRcode(req, r.ans.Rcode)
	m.Authoritative = r.ans.Rcode != miekg.RcodeServerFailure
	m.RecursionAvailable = true
	m.Answer, m.Ns, m.Extra = r.ans.Answer, r.ans.Ns, r.ans.Extra
	if r.ans.Chase != "" {
		s.chase(m, r.ans.Chase, q.Qtype)
	}
	shuffleAddresses(m.Answer)
	s.write(w, req, r, tcp)
}

// shuffleAddresses puts the address records that end an answer in a
// random order, so that clients that take the first spread over a
// headless Service's endpoints: what kubeadm's Corefile asks of CoreDNS
// with its loadbalance plugin. Only the answer's own slice is permuted;
// the records are the store's.
func shuffleAddresses(rrs []miekg.RR) {
	first := len(rrs)
	for first > 0 {
		if t := rrs[first-1].Header().Rrtype; t != miekg.TypeA && t != miekg.TypeAAAA {
			break
		}
		first--
	}
	addrs := rrs[first:]
	for i := len(addrs) - 1; i > 0; i-- {
		j := rand.IntN(i + 1)
		addrs[i], addrs[j] = addrs[j], addrs[i]
	}
}

// chase adds the addresses of an ExternalName's target to m: from the
// store when the target is in the zone, else from upstream (one step, as
// CoreDNS resolves it). Failing that, the CNAME alone is the answer.
func (s *Server) chase(m *miekg.Msg, target string, qtype uint16) {
	var a Answer
	s.cfg.Store.Lookup(target, qtype, &a)
	if !a.Forward {
		m.Answer = append(m.Answer, a.Answer...)
		return
	}
	if s.cfg.Forwarder == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.UpstreamTimeout)
	defer cancel()
	resp, err := s.cfg.Forwarder.Resolve(ctx, target, qtype)
	if err != nil {
		s.log.Debug("dns: resolve ExternalName target", "target", target, "err", err)
		return
	}
	m.Answer = append(m.Answer, resp.Answer...)
}

// forward answers req with what upstream says (or said, not long ago),
// or SERVFAIL; REFUSED when MaxForwards questions are already waiting.
func (s *Server) forward(w miekg.ResponseWriter, req *miekg.Msg, tcp bool) {
	if s.cache != nil {
		if resp := s.cache.get(req); resp != nil {
			s.write(w, req, &reply{msg: *resp}, tcp)
			return
		}
	}
	select {
	case s.fwds <- struct{}{}:
		defer func() { <-s.fwds }()
	default:
		resp := new(miekg.Msg)
		resp.SetRcode(req, miekg.RcodeRefused)
		s.write(w, req, &reply{msg: *resp}, tcp)
		return
	}
	var resp *miekg.Msg
	err := errNoUpstream
	if s.cfg.Forwarder != nil {
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.UpstreamTimeout)
		resp, err = s.cfg.Forwarder.Exchange(ctx, req, tcp)
		cancel()
		if err == nil && s.cache != nil {
			s.cache.put(req, resp)
		}
	}
	if err != nil {
		s.log.Debug("dns: forward failed", "name", req.Question[0].Name, "err", err)
		resp = new(miekg.Msg)
		resp.SetRcode(req, miekg.RcodeServerFailure)
		resp.RecursionAvailable = true
	}
	resp.Id = req.Id
	s.write(w, req, &reply{msg: *resp}, tcp)
}

// write sends r.msg, the answer to req: with an OPT record if req had
// one, and cut to what the client can take over UDP (512 bytes, or its
// EDNS0 buffer size up to maxUDPSize), with TC set when records had to go.
func (s *Server) write(w miekg.ResponseWriter, req *miekg.Msg, r *reply, tcp bool) {
	m := &r.msg
	size := miekg.MinMsgSize
	if opt := req.IsEdns0(); opt != nil {
		size = max(size, min(int(opt.UDPSize()), maxUDPSize))
		if m.IsEdns0() == nil {
			m.Extra = append(m.Extra, s.opt)
		}
	}
	if tcp {
		size = miekg.MaxMsgSize
	}
	m.Truncate(size)
	buf, err := m.PackBuffer(r.buf[:cap(r.buf)])
	if err != nil {
		s.log.Warn("dns: pack answer", "name", req.Question, "err", err)
		return
	}
	if cap(buf) <= 64<<10 {
		r.buf = buf[:0]
	}
	if _, err := w.Write(buf); err != nil {
		s.log.Debug("dns: write answer", "err", err)
	}
}
