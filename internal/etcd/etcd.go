// Package etcd runs an etcd member in-process through etcd's embed
// package: the single embedded member of `minik up`, or one member of a
// cluster for `minik etcd`.
package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.etcd.io/etcd/server/v3/storage/datadir"

	"minik/internal/procmem"
)

// MemberConfig configures one member. Empty URL lists take etcd's defaults.
type MemberConfig struct {
	Name             string
	DataDir          string
	ListenClientURLs []string
	// ListenClientHTTPURLs is etcd's --listen-client-http-urls: when set,
	// the client URLs serve gRPC alone, through gRPC's own server, and
	// these serve etcd's HTTP endpoints (/health, /metrics, /version, the
	// JSON gateway). On one port with TLS, etcd answers gRPC through Go's
	// HTTP/2 server, which writes each message apart: in the scheduler
	// race that cost etcd about half again as much CPU per write.
	ListenClientHTTPURLs     []string
	AdvertiseClientURLs      []string
	ListenPeerURLs           []string
	InitialAdvertisePeerURLs []string
	InitialCluster           string // "name=peerURL,name=peerURL"
	InitialClusterState      string // "new" (default) or "existing"
	Quiet                    bool   // log only fatal errors (the embedded member)
	// DiskReserve is the free space (bytes) under DataDir below which the
	// member refuses writes (etcd's NOSPACE alarm) instead of dying of a
	// full disk; 0 means DefaultDiskReserve, negative turns the guard off.
	DiskReserve int64
	// HeartbeatInterval and ElectionTimeout are etcd's
	// --heartbeat-interval and --election-timeout (at least 5 heartbeats);
	// BackendBatchInterval its --backend-batch-interval, how often applied
	// writes are committed to the database (each write is acknowledged
	// only once fsynced to the WAL, whatever this is). Zero: etcd's
	// defaults, 100ms, 1s and 100ms.
	HeartbeatInterval, ElectionTimeout, BackendBatchInterval time.Duration

	// ClientTLS serves clients over TLS (https:// client URLs); PeerTLS
	// does the same between members (https:// peer URLs). With
	// ClientCertAuth set, a member accepts only connections that present a
	// certificate signed by TrustedCAFile, as kubeadm's etcd does.
	ClientTLS, PeerTLS TLSFiles
}

// TLSFiles are the PEM files of one side of a member's TLS.
type TLSFiles struct {
	CertFile, KeyFile, TrustedCAFile string
	ClientCertAuth                   bool
}

func (t TLSFiles) info() transport.TLSInfo {
	return transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile, ClientCertAuth: t.ClientCertAuth}
}

// check says which file is missing for the https URLs given.
func (t TLSFiles) check(side string, urls []url.URL) error {
	https := false
	for _, u := range urls {
		https = https || u.Scheme == "https" || u.Scheme == "unixs"
	}
	switch {
	case !https:
		return nil
	case t.CertFile == "" || t.KeyFile == "":
		return fmt.Errorf("%s URLs are https: a certificate and key are needed", side)
	case t.ClientCertAuth && t.TrustedCAFile == "":
		return fmt.Errorf("%s client certificate auth needs a trusted CA file", side)
	}
	return nil
}

// Member is a running etcd member.
type Member struct {
	etcd *embed.Etcd
	stop context.CancelFunc
}

// StartMember starts a member and waits until it serves (or ctx ends).
func StartMember(ctx context.Context, mc MemberConfig) (*Member, error) {
	cfg := embed.NewConfig()
	if mc.Name != "" {
		cfg.Name = mc.Name
	}
	cfg.Dir = mc.DataDir
	var err error
	if cfg.ListenClientUrls, err = parseURLs(mc.ListenClientURLs, cfg.ListenClientUrls); err != nil {
		return nil, err
	}
	if cfg.ListenClientHttpUrls, err = parseURLs(mc.ListenClientHTTPURLs, nil); err != nil {
		return nil, err
	}
	if cfg.AdvertiseClientUrls, err = parseURLs(mc.AdvertiseClientURLs, cfg.ListenClientUrls); err != nil {
		return nil, err
	}
	if cfg.ListenPeerUrls, err = parseURLs(mc.ListenPeerURLs, cfg.ListenPeerUrls); err != nil {
		return nil, err
	}
	if cfg.AdvertisePeerUrls, err = parseURLs(mc.InitialAdvertisePeerURLs, cfg.ListenPeerUrls); err != nil {
		return nil, err
	}
	if err := mc.ClientTLS.check("client", slices.Concat(cfg.ListenClientUrls, cfg.ListenClientHttpUrls)); err != nil {
		return nil, err
	}
	if err := mc.PeerTLS.check("peer", cfg.ListenPeerUrls); err != nil {
		return nil, err
	}
	cfg.ClientTLSInfo, cfg.PeerTLSInfo = mc.ClientTLS.info(), mc.PeerTLS.info()
	if mc.InitialCluster != "" {
		cfg.InitialCluster = mc.InitialCluster
	} else {
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	}
	if mc.InitialClusterState != "" {
		cfg.ClusterState = mc.InitialClusterState
	}
	if mc.Quiet {
		// etcd logs its own orderly shutdown at error level; fatal problems
		// still reach the caller through Err().
		cfg.LogLevel = "fatal"
	}
	if mc.HeartbeatInterval > 0 {
		cfg.TickMs = uint(mc.HeartbeatInterval.Milliseconds())
	}
	if mc.ElectionTimeout > 0 {
		cfg.ElectionMs = uint(mc.ElectionTimeout.Milliseconds())
	}
	if mc.BackendBatchInterval > 0 {
		cfg.BackendBatchInterval = mc.BackendBatchInterval
	}
	// A write is acknowledged only once it is fsynced (etcd's default);
	// keep it that way so a killed process loses no acknowledged write.
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting etcd member %q: %w", cfg.Name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd member %q failed: %w", cfg.Name, err)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd member %q did not become ready within 60s (is a quorum of --initial-cluster up?)", cfg.Name)
	}
	// The database was mapped with MAP_POPULATE: all of it resident, holes
	// included, though a serving member reads little of it.
	if db, err := filepath.Abs(datadir.ToBackendFileName(cfg.Dir)); err == nil {
		if _, err := procmem.PageOutFile(db); err != nil {
			slog.Warn("could not page out etcd's database mapping", "err", err)
		}
	}
	m := &Member{etcd: e, stop: func() {}}
	if mc.DiskReserve >= 0 {
		reserve := uint64(mc.DiskReserve)
		if reserve == 0 {
			reserve = DefaultDiskReserve
		}
		var guardCtx context.Context
		guardCtx, m.stop = context.WithCancel(context.Background())
		go m.guardDisk(guardCtx, cfg.Dir, reserve)
	}
	return m, nil
}

// StartEmbedded runs the single member of `minik up` under dir/etcd,
// listening only on unix sockets inside dir, and returns an in-process
// client that skips the network entirely.
func StartEmbedded(ctx context.Context, dir string) (*Member, *clientv3.Client, error) {
	dir, err := filepath.Abs(dir) // unix:// URLs need an absolute path
	if err != nil {
		return nil, nil, err
	}
	etcdDir := filepath.Join(dir, "etcd")
	m, err := StartMember(ctx, MemberConfig{
		Name:             "minik",
		DataDir:          etcdDir,
		ListenClientURLs: []string{"unix://" + filepath.Join(dir, "etcd-client.sock")},
		ListenPeerURLs:   []string{"unix://" + filepath.Join(dir, "etcd-peer.sock")},
		Quiet:            true,
		// An idle member wakes on each raft tick and each backend batch
		// interval (two goroutines per tick, one per batch): at etcd's
		// 100ms each, about half of an idle `minik up`'s CPU. A lone member
		// has no peer to send heartbeats to; 200ms ticks keep etcd's 1s
		// election timeout, so it still leads within 0.2-1s of starting
		// (etcd fast-forwards all but the last of a lone member's election
		// ticks, the randomized rest is 1-5 ticks instead of 1-10). Writes
		// are acknowledged once in the WAL: committing the database every
		// second instead of every 100ms only batches its fsyncs.
		HeartbeatInterval:    200 * time.Millisecond,
		ElectionTimeout:      time.Second,
		BackendBatchInterval: time.Second,
	})
	if err != nil {
		return nil, nil, err
	}
	return m, v3client.New(m.etcd.Server), nil
}

// Err reports a fatal error of the running member.
func (m *Member) Err() <-chan error { return m.etcd.Err() }

// Close stops the member.
func (m *Member) Close() {
	m.stop()
	m.etcd.Close()
}

// ClientTLS is what a client presents to a TLS etcd: the CA that signed
// the members' certificates and its own certificate (the apiserver's
// --etcd-cafile, --etcd-certfile, --etcd-keyfile). Empty: plain http.
type ClientTLS struct {
	CAFile, CertFile, KeyFile string
}

// Config returns the client's TLS configuration, nil when no file is set.
func (t ClientTLS) Config() (*tls.Config, error) {
	if t == (ClientTLS{}) {
		return nil, nil
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, errors.New("etcd client TLS: a certificate needs its key and a key its certificate")
	}
	info := transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.CAFile}
	c, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}
	return c, nil
}

// Dial connects to an external etcd cluster over plain http.
func Dial(endpoints []string) (*clientv3.Client, error) {
	return DialTLS(endpoints, ClientTLS{})
}

// DialTLS connects to an external etcd cluster, over TLS when t names files.
func DialTLS(endpoints []string, t ClientTLS) (*clientv3.Client, error) {
	tlsConfig, err := t.Config()
	if err != nil {
		return nil, err
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second, TLS: tlsConfig})
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd %s: %w", strings.Join(endpoints, ","), err)
	}
	return c, nil
}

func parseURLs(in []string, def []url.URL) ([]url.URL, error) {
	if len(in) == 0 {
		return def, nil
	}
	var out []url.URL
	for _, s := range in {
		for _, part := range strings.Split(s, ",") {
			u, err := url.Parse(strings.TrimSpace(part))
			if err != nil {
				return nil, fmt.Errorf("bad URL %q: %w", part, err)
			}
			out = append(out, *u)
		}
	}
	return out, nil
}
