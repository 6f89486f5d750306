// Package containerd is the Runtime that runs pods in containerd: one
// containerd namespace per node; a sandbox is a network namespace whose
// eth0 is a veth on the node's bridge, made in-process with netlink
// (bridge.go; CNI's portmap only for hostPorts), with no pause container;
// each container is a
// containerd container with a runc task whose output goes to a log file.
package containerd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd"
	eventstypes "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/api/services/tasks/v1"
	runcoptions "github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/oci"
	"github.com/containerd/log"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// Config configures the containerd runtime.
type Config struct {
	// Address is containerd's socket (default DefaultAddress).
	Address string
	// Namespace is the containerd namespace of this node's containers,
	// e.g. "minik-node1" (see NamespaceFor). Required.
	Namespace string
	// StateDir names the runtime (default /var/lib/minik/runtime/NAMESPACE):
	// its RunDir is RunDirFor(StateDir). Earlier versions kept their
	// sandbox records, IPAM allocations and start times there; New moves
	// any it finds into RunDir.
	StateDir string
	// RunDir holds the runtime's state, all of which describes what dies
	// with the machine: sandbox records, IPAM allocations, start times,
	// network namespace handles and log FIFOs (default RunDirFor(StateDir),
	// on RunRoot's tmpfs). On a tmpfs, a reboot forgets sandboxes whose
	// namespaces and processes it ended, as the IPs they held; and a
	// record costs no disk journal in a pod's start.
	RunDir string
	// CNIBinDir holds the CNI plugins (default /usr/lib/cni, then
	// /opt/cni/bin).
	CNIBinDir string
	// PodCIDR is the pod range used until UpdatePodCIDR sets one.
	PodCIDR string
	// ContainerLogMaxSize is the size at which a container's log file is
	// rotated (default 10Mi), ContainerLogMaxFiles how many of its files
	// are kept, the current one included (default 5), as the kubelet's
	// --container-log-max-size and --container-log-max-files. A negative
	// size turns rotation off.
	ContainerLogMaxSize  int64
	ContainerLogMaxFiles int
	// Snapshotter (default overlayfs).
	Snapshotter string
}

// NamespaceFor is the containerd namespace of a node's containers.
func NamespaceFor(node string) string { return "minik-" + node }

// CgroupParent is the cgroup every container is put under, as
// CgroupParent/NAMESPACE/ID (in each v1 hierarchy, or in the v2 tree).
const CgroupParent = "minik"

// Labels on containerd containers.
const (
	labelKind    = "minik.io/kind"
	labelSandbox = "minik.io/sandbox"
	labelName    = "minik.io/name"
	labelAttempt = "minik.io/attempt"
	labelLogPath = "minik.io/log-path"
	// labelImageID is the ID (config digest) of the image the container
	// was made from: its status's imageRef, whatever its tag names later.
	labelImageID = "minik.io/image-id"
	// labelStartedAt held the start time before it moved to a file
	// (startedFile); containers an older minik started still have it.
	labelStartedAt  = "minik.io/started-at"
	labelOOM        = "minik.io/oom-killed"
	labelExitCode   = "minik.io/exit-code"
	labelFinishedAt = "minik.io/finished-at"
	labelReason     = "minik.io/reason"
	annPrefix       = "minik.io/ann."
	runcRuntime     = "io.containerd.runc.v2"
)

// taskReapDelay is how long an exited task is kept before it is deleted
// (its exit kept in labels), so that the container's last output can
// reach the log.
const taskReapDelay = 2 * time.Second

// Runtime implements runtime.Runtime on containerd.
type Runtime struct {
	cfg    Config
	client *containerd.Client
	net    *podNetwork

	mu   sync.Mutex
	cidr string
	// sandboxes is the cache of sandbox records; the files in StateDir
	// are the truth across restarts.
	sandboxes map[string]*sandboxRecord
	// images caches what was read of each image manifest, and processes
	// the process specs made from an image and user options
	// (imagecache.go).
	images    map[digest.Digest]*imageFacts
	processes map[processKey][]byte
	// attached holds the containers whose output is being copied to their
	// log and attached clients (logs.go, attach.go).
	attached map[string]*attachIO
	// layerDirs caches each container's writable layer directory
	// (stats.go), "" where the snapshotter's mounts do not name one.
	layerDirs map[string]string
	// containers holds which containers each sandbox has (containerindex.go).
	containers *containerIndex
	// created holds the containers CreateContainer made and StartContainer
	// has not started yet, with the record containerd returned: the start
	// that follows needs no Get to load it.
	created map[string]containerd.Container
	// imageNames caches which image each name points to (imagenames.go).
	imageNames imageNames
	// startedAt holds when each container's task started (unix ns); the
	// files in StateDir/started are the truth across restarts.
	startedAt map[string]int64
}

var _ runtime.Runtime = &Runtime{}

type sandboxRecord struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	UID         string            `json:"uid"`
	Attempt     uint32            `json:"attempt"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Ports       []portMapping     `json:"ports"`
	HostNetwork bool              `json:"hostNetwork"`
	HostPID     bool              `json:"hostPID,omitempty"`
	HostIPC     bool              `json:"hostIPC,omitempty"`
	Hostname    string            `json:"hostname"`
	LogDir      string            `json:"logDir"`
	Sysctls     map[string]string `json:"sysctls"`
	NetNS       string            `json:"netns"`
	IP          string            `json:"ip"`
	CIDR        string            `json:"cidr"`
	CNIResult   json.RawMessage   `json:"cniResult,omitempty"`
	CreatedAt   int64             `json:"createdAt"`
	Ready       bool              `json:"ready"`
}

// New connects to containerd and prepares the state directory.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.Namespace == "" {
		return nil, errors.New("containerd runtime: Namespace is required")
	}
	if cfg.Address == "" {
		cfg.Address = DefaultAddress
	}
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join("/var/lib/minik/runtime", cfg.Namespace)
	}
	if cfg.ContainerLogMaxSize == 0 {
		cfg.ContainerLogMaxSize = runtime.DefaultContainerLogMaxSize
	}
	if cfg.ContainerLogMaxFiles == 0 {
		cfg.ContainerLogMaxFiles = runtime.DefaultContainerLogMaxFiles
	}
	if cfg.ContainerLogMaxFiles < 2 {
		return nil, fmt.Errorf("containerd runtime: ContainerLogMaxFiles must be at least 2, not %d", cfg.ContainerLogMaxFiles)
	}
	if cfg.Snapshotter == "" {
		cfg.Snapshotter = "overlayfs"
	}
	if cfg.CNIBinDir == "" {
		cfg.CNIBinDir = "/usr/lib/cni"
		if _, err := os.Stat(filepath.Join(cfg.CNIBinDir, "portmap")); err != nil {
			cfg.CNIBinDir = "/opt/cni/bin"
		}
	}
	if cfg.RunDir == "" {
		if err := EnsureRunRoot(); err != nil {
			return nil, err
		}
		cfg.RunDir = RunDirFor(cfg.StateDir)
	}
	for _, d := range slices.Concat(stateSubdirs, []string{"netns", "fifo"}) {
		if err := os.MkdirAll(filepath.Join(cfg.RunDir, d), 0o700); err != nil {
			return nil, err
		}
	}
	if err := moveLegacyState(cfg.StateDir, cfg.RunDir); err != nil {
		return nil, err
	}
	// The containerd client logs every failed registry host at info level;
	// the kubelet reports pull errors itself.
	_ = log.SetLevel("warn")
	client, err := containerd.New(cfg.Address, containerd.WithDefaultNamespace(cfg.Namespace), containerd.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connecting to containerd at %s: %w", cfg.Address, err)
	}
	// The namespace exists from the start, so that `minik image load`
	// finds the node before its first pod.
	if err := client.NamespaceService().Create(namespaces.WithNamespace(ctx, cfg.Namespace), cfg.Namespace, map[string]string{"minik.io/node": "true"}); err != nil && !errdefs.IsAlreadyExists(err) {
		client.Close()
		return nil, fmt.Errorf("creating containerd namespace %s: %w", cfg.Namespace, err)
	}
	r := &Runtime{
		cfg: cfg, client: client, cidr: cfg.PodCIDR, sandboxes: map[string]*sandboxRecord{},
		images: map[digest.Digest]*imageFacts{}, processes: map[processKey][]byte{},
		attached: map[string]*attachIO{}, containers: newContainerIndex(), created: map[string]containerd.Container{},
		startedAt: map[string]int64{},
		net:       newPodNetwork(cfg.CNIBinDir, cfg.RunDir, bridgeName(cfg.Namespace)),
	}
	if err := r.loadSandboxes(); err != nil {
		client.Close()
		return nil, err
	}
	list, err := client.ContainerService().List(r.ctx(ctx), containersFilter)
	if err != nil {
		client.Close()
		return nil, err
	}
	r.containers.addListed(list)
	r.removeOrphans(ctx, list)
	if err := r.loadStarted(); err != nil {
		client.Close()
		return nil, err
	}
	if err := r.reattachLogs(ctx, list); err != nil {
		client.Close()
		return nil, err
	}
	go r.watchOOM(ctx)
	go r.watchImages(ctx)
	return r, nil
}

// bridgeName is a per-node bridge device name (at most 15 bytes).
func bridgeName(ns string) string { return fmt.Sprintf("mk%08x", hash(ns)) }

func hash(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// Namespace is the containerd namespace of this runtime's containers.
func (r *Runtime) Namespace() string { return r.cfg.Namespace }

// Close closes the containerd connection and the pod network's netlink socket.
func (r *Runtime) Close() error {
	r.net.close()
	return r.client.Close()
}

func (r *Runtime) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.cfg.Namespace)
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// watchOOM marks containers whose cgroup ran out of memory, so that their
// exit is reported as OOMKilled.
func (r *Runtime) watchOOM(ctx context.Context) {
	for ctx.Err() == nil {
		ch, errs := r.client.Subscribe(r.ctx(ctx), `topic=="/tasks/oom"`)
		followEvents(ctx, ch, errs, func(v any) {
			if oom, ok := v.(*eventstypes.TaskOOM); ok {
				r.markOOM(ctx, oom.ContainerID)
			}
		})
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (r *Runtime) markOOM(ctx context.Context, id string) {
	c, err := r.client.LoadContainer(r.ctx(ctx), id)
	if err == nil {
		_, _ = c.SetLabels(r.ctx(ctx), map[string]string{labelOOM: "true"})
		r.containers.forgetRecord(id) // the next read gets the label
	}
}

func (r *Runtime) Version(ctx context.Context) (*cri.VersionResponse, error) {
	v, err := r.client.Version(r.ctx(ctx))
	if err != nil {
		return nil, err
	}
	return &cri.VersionResponse{RuntimeName: "containerd", RuntimeVersion: v.Version}, nil
}

// UpdatePodCIDR sets the pod range and readies the node's pod network for
// it: an error says no pod can get a network (the kubelet reports the
// node NotReady with it). The bridge of an earlier range is reconciled.
func (r *Runtime) UpdatePodCIDR(ctx context.Context, cidr string) error {
	r.mu.Lock()
	if cidr != "" {
		r.cidr = cidr
	}
	cur := r.cidr
	r.mu.Unlock()
	if err := r.net.ready(ctx, cur); err != nil {
		return fmt.Errorf("pod network not ready: %w", err)
	}
	return nil
}

// --- sandboxes ---

func (r *Runtime) sandboxFile(id string) string {
	return filepath.Join(r.cfg.RunDir, "sandboxes", id+".json")
}

func (r *Runtime) loadSandboxes() error {
	entries, err := os.ReadDir(filepath.Join(r.cfg.RunDir, "sandboxes"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(r.cfg.RunDir, "sandboxes", e.Name()))
		if err != nil {
			continue
		}
		var rec sandboxRecord
		if json.Unmarshal(data, &rec) == nil && rec.ID != "" {
			r.sandboxes[rec.ID] = &rec
		}
	}
	return nil
}

func (r *Runtime) saveSandbox(rec *sandboxRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp := r.sandboxFile(rec.ID) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, r.sandboxFile(rec.ID))
}

func (r *Runtime) sandbox(id string) (*sandboxRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.sandboxes[id]
	if !ok {
		return nil, fmt.Errorf("sandbox %s: %w", id, runtime.ErrNotFound)
	}
	return rec, nil
}

func criPorts(ps []portMapping) []*cri.PortMapping {
	var out []*cri.PortMapping
	for _, p := range ps {
		out = append(out, &cri.PortMapping{Protocol: p.Protocol, ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP})
	}
	return out
}

func (r *Runtime) RunPodSandbox(ctx context.Context, cfg *cri.PodSandboxConfig) (string, error) {
	m := cfg.GetMetadata()
	rec := &sandboxRecord{
		ID: newID(), Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUid(), Attempt: m.GetAttempt(),
		Labels: cfg.Labels, Annotations: cfg.Annotations, HostNetwork: cfg.HostNetwork, HostPID: cfg.HostPid, HostIPC: cfg.HostIpc, Hostname: cfg.Hostname,
		LogDir: cfg.LogDirectory, Sysctls: cfg.Sysctls, CreatedAt: time.Now().UnixNano(), Ready: true,
	}
	for _, p := range cfg.PortMappings {
		rec.Ports = append(rec.Ports, portMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: p.Protocol, HostIP: p.HostIp})
	}
	if rec.LogDir != "" {
		if err := os.MkdirAll(rec.LogDir, 0o755); err != nil {
			return "", err
		}
	}
	if !cfg.HostNetwork {
		r.mu.Lock()
		rec.CIDR = r.cidr
		r.mu.Unlock()
		rec.NetNS = filepath.Join(r.cfg.RunDir, "netns", rec.ID)
		start := time.Now()
		if err := newNetNS(rec.NetNS); err != nil {
			return "", err
		}
		slog.Debug("netns made", "sandbox", rec.ID, "took", time.Since(start))
		start = time.Now()
		ip, res, err := r.net.add(ctx, rec.ID, rec.NetNS, rec.CIDR, cfg.PortMappings)
		slog.Debug("pod network attached", "sandbox", rec.ID, "took", time.Since(start))
		rec.CNIResult = res
		if err != nil {
			_ = r.net.del(context.WithoutCancel(ctx), rec.ID, rec.NetNS, cfg.PortMappings, res)
			_ = removeNetNS(rec.NetNS)
			return "", err
		}
		rec.IP = ip
	}
	if err := r.saveSandbox(rec); err != nil {
		return "", err
	}
	r.mu.Lock()
	r.sandboxes[rec.ID] = rec
	r.mu.Unlock()
	return rec.ID, nil
}

func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	rec, err := r.sandbox(id)
	if err != nil {
		return err
	}
	cs, err := r.ListContainers(ctx, id)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.State == cri.ContainerState_CONTAINER_RUNNING {
			if err := r.StopContainer(ctx, c.Id, 0); err != nil {
				return err
			}
		}
	}
	r.mu.Lock()
	wasReady := rec.Ready
	rec.Ready = false
	r.mu.Unlock()
	if wasReady && rec.NetNS != "" {
		if err := r.net.del(ctx, rec.ID, rec.NetNS, criPorts(rec.Ports), rec.CNIResult); err != nil {
			return err
		}
	}
	return r.saveSandbox(rec)
}

func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	rec, err := r.sandbox(id)
	if errors.Is(err, runtime.ErrNotFound) {
		return nil
	}
	if rec.Ready {
		if err := r.StopPodSandbox(ctx, id); err != nil {
			return err
		}
	}
	cs, err := r.ListContainers(ctx, id)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if err := r.RemoveContainer(ctx, c.Id); err != nil {
			return err
		}
	}
	if rec.NetNS != "" {
		if err := removeNetNS(rec.NetNS); err != nil {
			return err
		}
	}
	if err := os.Remove(r.sandboxFile(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	r.mu.Lock()
	delete(r.sandboxes, id)
	r.mu.Unlock()
	return nil
}

func (r *Runtime) ListPodSandbox(_ context.Context, podUID string) ([]*cri.PodSandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*cri.PodSandbox, 0, len(r.sandboxes))
	for _, rec := range r.sandboxes {
		if podUID != "" && rec.UID != podUID {
			continue
		}
		state := cri.PodSandboxState_SANDBOX_NOTREADY
		if rec.Ready {
			state = cri.PodSandboxState_SANDBOX_READY
		}
		out = append(out, &cri.PodSandbox{
			Id:       rec.ID,
			Metadata: &cri.PodSandboxMetadata{Name: rec.Name, Namespace: rec.Namespace, Uid: rec.UID, Attempt: rec.Attempt},
			State:    state, CreatedAt: rec.CreatedAt, Labels: rec.Labels, Annotations: rec.Annotations,
			Ip: rec.IP, Netns: rec.NetNS,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt < out[j].CreatedAt })
	return out, nil
}

// --- containers ---

func (r *Runtime) image(ctx context.Context, ref string) (containerd.Image, error) {
	name, err := runtime.NormalizeImage(ref)
	if err != nil {
		return nil, err
	}
	img, gen, ok := r.imageNames.get(name)
	if ok {
		return img, nil
	}
	img, err = r.client.GetImage(ctx, name)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil, fmt.Errorf("image %s: %w", name, runtime.ErrImageNotFound)
		}
		return nil, err
	}
	r.imageNames.put(name, img, gen)
	return img, nil
}

func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, cfg *cri.ContainerConfig, _ *cri.PodSandboxConfig) (string, error) {
	ctx = r.ctx(ctx)
	sb, err := r.sandbox(sandboxID)
	if err != nil {
		return "", err
	}
	img, err := r.image(ctx, cfg.Image)
	if err != nil {
		return "", err
	}
	facts, err := r.imageFacts(ctx, img)
	if err != nil {
		return "", err
	}
	if err := r.ensureUnpacked(ctx, img, facts); err != nil {
		return "", err
	}
	id := newID()
	logPath := ""
	if cfg.LogPath != "" && sb.LogDir != "" {
		logPath = filepath.Join(sb.LogDir, cfg.LogPath)
		if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
			return "", err
		}
	}
	// Kubernetes' rule: command replaces the entrypoint (and drops the
	// image's cmd); args alone replace the image's cmd.
	args := append([]string{}, facts.entrypoint...)
	switch {
	case len(cfg.Command) > 0:
		args = append(append([]string{}, cfg.Command...), cfg.Args...)
	case len(cfg.Args) > 0:
		args = append(args, cfg.Args...)
	default:
		args = append(args, facts.cmd...)
	}
	if len(args) == 0 {
		return "", errors.New("no command given and the image has none")
	}
	env := make([]string, 0, len(cfg.Envs))
	for _, kv := range cfg.Envs {
		env = append(env, kv.Key+"="+kv.Value)
	}
	// The user options change only the process's user; they go with the
	// image's config, whose outcome is kept (withImageProcess).
	var userOpts []oci.SpecOpts
	userKey := ""
	if sc := cfg.SecurityContext; sc != nil {
		switch {
		case sc.HasRunAsUser && sc.HasRunAsGroup:
			userOpts = append(userOpts, oci.WithUIDGID(uint32(sc.RunAsUser), uint32(sc.RunAsGroup)))
		case sc.HasRunAsUser:
			userOpts = append(userOpts, oci.WithUserID(uint32(sc.RunAsUser)))
		}
		if len(sc.SupplementalGroups) > 0 {
			gids := make([]uint32, len(sc.SupplementalGroups))
			for i, g := range sc.SupplementalGroups {
				gids[i] = uint32(g)
			}
			userOpts = append(userOpts, oci.WithAppendAdditionalGroups(groupNames(gids)...))
		}
		userKey = fmt.Sprintf("%v:%d:%v:%d:%v", sc.HasRunAsUser, sc.RunAsUser, sc.HasRunAsGroup, sc.RunAsGroup, sc.SupplementalGroups)
	}
	opts := []oci.SpecOpts{
		oci.WithDefaultSpecForPlatform("linux/" + goarch()),
		r.withImageProcess(img, userKey, userOpts), // right after the default spec: it replaces the process
		oci.WithProcessArgs(args...),
		oci.WithEnv(env),
		oci.WithCgroup(filepath.Join("/", CgroupParent, r.cfg.Namespace, id)),
	}
	// The kubelet mounts the pod's own /etc/resolv.conf and /etc/hosts;
	// a container it gave none of them sees the host's.
	mountsAt := func(dst string) bool {
		for _, m := range cfg.Mounts {
			if m.ContainerPath == dst {
				return true
			}
		}
		return false
	}
	if !mountsAt("/etc/resolv.conf") {
		opts = append(opts, oci.WithHostResolvconf)
	}
	if cfg.WorkingDir != "" {
		opts = append(opts, oci.WithProcessCwd(cfg.WorkingDir))
	}
	if sb.HostNetwork {
		opts = append(opts, oci.WithHostNamespace(specs.NetworkNamespace))
		if !mountsAt("/etc/hosts") {
			opts = append(opts, oci.WithHostHostsFile)
		}
	} else {
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: sb.NetNS}))
		if sb.Hostname != "" {
			opts = append(opts, oci.WithHostname(sb.Hostname))
		}
	}
	if sb.HostIPC {
		opts = append(opts, oci.WithHostNamespace(specs.IPCNamespace))
	}
	switch {
	case sb.HostPID:
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	case cfg.TargetContainerId != "":
		// An ephemeral container sees its target's processes.
		pid, err := r.taskPid(ctx, cfg.TargetContainerId)
		if err != nil {
			return "", fmt.Errorf("target container: %w", err)
		}
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.PIDNamespace, Path: fmt.Sprintf("/proc/%d/ns/pid", pid)}))
	}
	var mounts []specs.Mount
	for _, m := range cfg.Mounts {
		o := []string{"rbind", "rprivate"}
		if m.Readonly {
			o = append(o, "ro")
		} else {
			o = append(o, "rw")
		}
		mounts = append(mounts, specs.Mount{Destination: m.ContainerPath, Source: m.HostPath, Type: "bind", Options: o})
	}
	if len(mounts) > 0 {
		opts = append(opts, oci.WithMounts(mounts))
	}
	if res := cfg.Resources; res != nil {
		if res.MemoryLimitInBytes > 0 {
			opts = append(opts, oci.WithMemoryLimit(uint64(res.MemoryLimitInBytes)))
		}
		if res.CpuShares > 0 {
			opts = append(opts, oci.WithCPUShares(uint64(res.CpuShares)))
		}
		if res.CpuQuota > 0 {
			opts = append(opts, oci.WithCPUCFS(res.CpuQuota, uint64(res.CpuPeriod)))
		}
	}
	if sc := cfg.SecurityContext; sc != nil {
		if sc.ReadonlyRootfs {
			opts = append(opts, oci.WithRootFSReadonly())
		}
		if sc.Privileged {
			opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices)
		}
		if sc.NoNewPrivs {
			opts = append(opts, oci.WithNoNewPrivileges)
		}
	}
	if len(sb.Sysctls) > 0 {
		sysctls := sb.Sysctls
		opts = append(opts, func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
			if s.Linux == nil {
				s.Linux = &specs.Linux{}
			}
			if s.Linux.Sysctl == nil {
				s.Linux.Sysctl = map[string]string{}
			}
			for k, v := range sysctls {
				s.Linux.Sysctl[k] = v
			}
			return nil
		})
	}
	if cfg.Tty {
		opts = append(opts, oci.WithTTY)
	}
	labels := map[string]string{
		labelStdin: strconv.FormatBool(cfg.Stdin), labelStdinOnce: strconv.FormatBool(cfg.StdinOnce), labelTTY: strconv.FormatBool(cfg.Tty),
		labelKind: "container", labelSandbox: sandboxID,
		labelName: cfg.GetMetadata().GetName(), labelAttempt: strconv.Itoa(int(cfg.GetMetadata().GetAttempt())),
		labelLogPath: logPath, labelImageID: facts.id,
	}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	for k, v := range cfg.Annotations {
		labels[annPrefix+k] = v
	}
	r.containers.startCreate(sandboxID, id)
	defer r.containers.endCreate(id)
	c, err := r.client.NewContainer(ctx, id,
		containerd.WithImage(img),
		r.withRootfs(id, img, facts),
		containerd.WithRuntime(runcRuntime, &runcoptions.Options{Root: RuncRoot}),
		containerd.WithNewSpec(opts...),
		containerd.WithContainerLabels(labels),
	)
	if err != nil {
		_ = r.client.SnapshotService(r.cfg.Snapshotter).Remove(ctx, id)
		return "", fmt.Errorf("creating container: %w", err)
	}
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata) // the record Create returned
	if err != nil {
		return "", err
	}
	r.containers.add(info)
	r.mu.Lock()
	r.created[id] = c
	r.mu.Unlock()
	return id, nil
}

// taskPid is the host pid of a running container's process.
func (r *Runtime) taskPid(ctx context.Context, id string) (uint32, error) {
	c, err := r.load(ctx, id)
	if err != nil {
		return 0, err
	}
	t, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return 0, fmt.Errorf("container %s is not running", id)
	} else if err != nil {
		return 0, err
	}
	return t.Pid(), nil
}

// groupNames turns numeric groups into the strings WithAppendAdditionalGroups
// accepts (it takes numbers as they are).
func groupNames(gids []uint32) []string {
	out := make([]string, len(gids))
	for i, g := range gids {
		out[i] = strconv.FormatUint(uint64(g), 10)
	}
	return out
}

func (r *Runtime) load(ctx context.Context, id string) (containerd.Container, error) {
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
		}
		return nil, err
	}
	return c, nil
}

func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	ctx = r.ctx(ctx)
	r.mu.Lock()
	c, ok := r.created[id]
	delete(r.created, id)
	r.mu.Unlock()
	if !ok {
		var err error
		if c, err = r.load(ctx, id); err != nil {
			return err
		}
	}
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata) // as loaded just now
	if err != nil {
		return err
	}
	ioOpts, sink, a, err := r.taskIO(info.Labels)
	if err != nil {
		return err
	}
	task, err := c.NewTask(ctx, cio.NewCreator(ioOpts...))
	if err != nil {
		_ = sink.close()
		return fmt.Errorf("creating task: %w", err)
	}
	r.drainLogs(id, task.IO(), sink, a)
	if err := task.Start(ctx); err != nil {
		_, _ = task.Delete(ctx, containerd.WithProcessKill)
		return fmt.Errorf("starting task: %w", err)
	}
	return r.saveStarted(id, time.Now().UnixNano())
}

// startedFile holds when container id started. A file, not a label on
// the container: a label is a write to containerd's database (a commit
// and an fsync, about 1.2 ms of CPU between the two processes, in every
// start's path); the file costs a tenth of that.
func (r *Runtime) startedFile(id string) string {
	return filepath.Join(r.cfg.RunDir, "started", id)
}

func (r *Runtime) saveStarted(id string, at int64) error {
	if err := os.WriteFile(r.startedFile(id), []byte(strconv.FormatInt(at, 10)), 0o600); err != nil {
		return err
	}
	r.mu.Lock()
	r.startedAt[id] = at
	r.mu.Unlock()
	return nil
}

// loadStarted reads the start times of the indexed containers, and
// removes those of containers that are gone.
func (r *Runtime) loadStarted() error {
	dir := filepath.Join(r.cfg.RunDir, "started")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, ok := r.containers.record(e.Name()); !ok {
			_ = os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if at, err := strconv.ParseInt(string(data), 10, 64); err == nil {
			r.startedAt[e.Name()] = at
		}
	}
	return nil
}

// forgetStarted drops the start time of a removed container.
func (r *Runtime) forgetStarted(id string) {
	r.mu.Lock()
	delete(r.startedAt, id)
	r.mu.Unlock()
	_ = os.Remove(r.startedFile(id))
}

func (r *Runtime) StopContainer(ctx context.Context, id string, timeout int64) error {
	ctx = r.ctx(ctx)
	c, err := r.load(ctx, id)
	if err != nil {
		return err
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	st, err := task.Status(ctx)
	if err != nil {
		return err
	}
	if st.Status == containerd.Stopped {
		return nil
	}
	exited, err := task.Wait(ctx)
	if err != nil {
		return err
	}
	if timeout > 0 {
		if err := task.Kill(ctx, syscall.SIGTERM); err != nil && !errdefs.IsNotFound(err) {
			return err
		}
		select {
		case <-exited:
			return nil
		case <-time.After(time.Duration(timeout) * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
		return err
	}
	select {
	case <-exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("container %s did not exit after SIGKILL", id)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx = r.ctx(ctx)
	r.mu.Lock()
	delete(r.created, id)
	r.mu.Unlock()
	c, err := r.load(ctx, id)
	if errors.Is(err, runtime.ErrNotFound) {
		r.dropContainer(id)
		return nil
	} else if err != nil {
		return err
	}
	if task, err := c.Task(ctx, nil); err == nil {
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("deleting task: %w", err)
		}
	}
	if err := c.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return err
	}
	r.dropContainer(id)
	return nil
}

func (r *Runtime) ListContainers(ctx context.Context, sandboxID string) ([]*cri.Container, error) {
	sts, err := r.ListContainerStatuses(ctx, sandboxID)
	if err != nil {
		return nil, err
	}
	out := make([]*cri.Container, 0, len(sts))
	for _, st := range sts {
		out = append(out, &cri.Container{
			Id: st.Id, PodSandboxId: st.Labels[labelSandbox], Metadata: st.Metadata, Image: st.Image, ImageRef: st.ImageRef,
			State: st.State, CreatedAt: st.CreatedAt, Labels: st.Labels, Annotations: st.Annotations,
		})
	}
	return out, nil
}

// ListContainerStatuses returns the full status of the sandbox's
// containers (every container when sandboxID is empty), oldest first:
// each container record and task is read at most once
// (runtime.ContainerStatusLister).
func (r *Runtime) ListContainerStatuses(ctx context.Context, sandboxID string) ([]*cri.ContainerStatus, error) {
	ctx = r.ctx(ctx)
	var out []*cri.ContainerStatus
	if sandboxID == "" {
		list, err := r.listRecords(ctx)
		if err != nil {
			return nil, err
		}
		procs, err := r.allTasks(ctx)
		if err != nil {
			return nil, err
		}
		out = make([]*cri.ContainerStatus, 0, len(list))
		for _, info := range list {
			out = append(out, r.status(ctx, info, procs[info.ID]))
		}
	} else {
		// A sandbox's containers are read one by one by the IDs the index
		// holds.
		ids := r.containers.of(sandboxID)
		out = make([]*cri.ContainerStatus, 0, len(ids))
		for _, id := range ids {
			info, proc, err := r.readContainer(ctx, id)
			if errors.Is(err, runtime.ErrNotFound) {
				continue
			} else if err != nil {
				return nil, err
			}
			out = append(out, r.status(ctx, info, proc))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt < out[j].CreatedAt })
	return out, nil
}

var _ runtime.ContainerStatusLister = &Runtime{}

// containersFilter selects this runtime's containers in its namespace.
var containersFilter = fmt.Sprintf(`labels.%q==container`, labelKind)

// listRecords returns the records of every container of the node, and
// adds them to the index.
func (r *Runtime) listRecords(ctx context.Context) ([]containers.Container, error) {
	list, err := r.client.ContainerService().List(ctx, containersFilter)
	if err != nil {
		return nil, err
	}
	r.containers.addListed(list)
	return list, nil
}

// allTasks returns the processes of every task of the namespace by
// container ID. Every task containerd lists costs a call to its shim, so
// only the relist (and a restart) asks for all of them.
func (r *Runtime) allTasks(ctx context.Context) (map[string]*task.Process, error) {
	resp, err := r.client.TaskService().List(ctx, &tasks.ListTasksRequest{})
	if err != nil {
		return nil, err
	}
	procs := make(map[string]*task.Process, len(resp.Tasks))
	for _, p := range resp.Tasks {
		// A listed task names its container in ID (ContainerID is left empty).
		procs[p.ID] = p
	}
	return procs, nil
}

// readContainer returns container id's record and its task's process (nil
// when it has none). The task is asked for first: while one exists, the
// record can have changed only by this runtime's own writes, so the copy
// the index keeps serves (a Get less for every running container a pod's
// sync observes). Without a task the record is read again, which also
// finds a container deleted behind the runtime's back (ErrNotFound; the
// index drops it).
func (r *Runtime) readContainer(ctx context.Context, id string) (containers.Container, *task.Process, error) {
	var proc *task.Process
	resp, err := r.client.TaskService().Get(ctx, &tasks.GetRequest{ContainerID: id})
	if err == nil {
		proc = resp.Process
	} else if !errdefs.IsNotFound(errdefs.FromGRPC(err)) {
		return containers.Container{}, nil, err
	}
	if proc != nil {
		if info, ok := r.containers.record(id); ok {
			return info, proc, nil
		}
	}
	info, err := r.client.ContainerService().Get(ctx, id)
	if errdefs.IsNotFound(err) {
		r.dropContainer(id)
		return containers.Container{}, nil, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	} else if err != nil {
		return containers.Container{}, nil, err
	}
	if info.Labels[labelKind] == "container" {
		r.containers.add(info)
	}
	return info, proc, nil
}

// dropContainer forgets a container that is gone: its index entry, start
// time and unstarted handle.
func (r *Runtime) dropContainer(id string) {
	r.containers.remove(id)
	r.forgetStarted(id)
	r.mu.Lock()
	delete(r.created, id)
	r.mu.Unlock()
}

func (r *Runtime) ContainerStatus(ctx context.Context, id string) (*cri.ContainerStatus, error) {
	ctx = r.ctx(ctx)
	info, proc, err := r.readContainer(ctx, id)
	if err != nil {
		return nil, err
	}
	return r.status(ctx, info, proc), nil
}

// imageRef returns the config digest of the image a name points to now
// (both reads cached: image, imageFacts): the imageRef of a container an
// older minik made, which did not record it.
func (r *Runtime) imageRef(ctx context.Context, name string) string {
	img, err := r.image(ctx, name)
	if err != nil {
		return ""
	}
	f, err := r.imageFacts(ctx, img)
	if err != nil {
		return ""
	}
	return f.id
}

// status computes a container's status from its record and its task (nil
// when it has none). A stopped task is deleted once its exit is kept in
// the container's labels, so that its shim exits.
func (r *Runtime) status(ctx context.Context, info containers.Container, proc *task.Process) *cri.ContainerStatus {
	labels := map[string]string{}
	annotations := map[string]string{}
	for k, v := range info.Labels {
		if strings.HasPrefix(k, annPrefix) {
			annotations[strings.TrimPrefix(k, annPrefix)] = v
		} else {
			labels[k] = v
		}
	}
	attempt, _ := strconv.Atoi(info.Labels[labelAttempt])
	st := &cri.ContainerStatus{
		Id:        info.ID,
		Metadata:  &cri.ContainerMetadata{Name: info.Labels[labelName], Attempt: uint32(attempt)},
		State:     cri.ContainerState_CONTAINER_CREATED,
		CreatedAt: info.CreatedAt.UnixNano(),
		Image:     info.Image,
		ImageRef:  info.Labels[labelImageID],
		Labels:    labels, Annotations: annotations,
		LogPath: info.Labels[labelLogPath],
	}
	if st.ImageRef == "" { // made by an older minik
		st.ImageRef = r.imageRef(ctx, info.Image)
	}
	r.mu.Lock()
	st.StartedAt = r.startedAt[info.ID]
	r.mu.Unlock()
	if st.StartedAt == 0 {
		st.StartedAt, _ = strconv.ParseInt(info.Labels[labelStartedAt], 10, 64)
	}
	if code, ok := info.Labels[labelExitCode]; ok {
		n, _ := strconv.Atoi(code)
		st.State = cri.ContainerState_CONTAINER_EXITED
		st.ExitCode = int32(n)
		st.FinishedAt, _ = strconv.ParseInt(info.Labels[labelFinishedAt], 10, 64)
		st.Reason = info.Labels[labelReason]
		return st
	}
	if proc == nil {
		if st.StartedAt != 0 {
			// Started once, and its task is gone (containerd lost it).
			st.State = cri.ContainerState_CONTAINER_EXITED
			st.ExitCode, st.Reason, st.FinishedAt = 255, "Error", st.StartedAt
		}
		return st
	}
	switch proc.Status {
	case task.Status_RUNNING, task.Status_PAUSED, task.Status_PAUSING:
		st.State = cri.ContainerState_CONTAINER_RUNNING
	case task.Status_STOPPED:
		r.waitOutputWritten(info.ID, outputDrainWait)
		st.State = cri.ContainerState_CONTAINER_EXITED
		st.ExitCode = int32(proc.ExitStatus)
		if proc.ExitedAt != nil {
			st.FinishedAt = proc.ExitedAt.AsTime().UnixNano()
		}
		switch {
		case info.Labels[labelOOM] == "true" || r.oomKilled(info.ID):
			st.Reason = "OOMKilled"
		case st.ExitCode == 0:
			st.Reason = "Completed"
		default:
			st.Reason = "Error"
		}
		if time.Since(time.Unix(0, st.FinishedAt)) < taskReapDelay {
			return st // the shim may still be copying the last output
		}
		updated, err := r.client.ContainerService().Update(ctx, containers.Container{ID: info.ID, Labels: map[string]string{
			labelExitCode: strconv.Itoa(int(st.ExitCode)), labelFinishedAt: strconv.FormatInt(st.FinishedAt, 10), labelReason: st.Reason,
		}}, "labels."+labelExitCode, "labels."+labelFinishedAt, "labels."+labelReason)
		if err == nil {
			r.containers.add(updated)
			if _, err := r.client.TaskService().Delete(ctx, &tasks.DeleteTaskRequest{ContainerID: info.ID}); err != nil && !errdefs.IsNotFound(errdefs.FromGRPC(err)) {
				log.G(ctx).WithError(err).Warn("deleting an exited task")
			}
		}
	case task.Status_CREATED:
		st.State = cri.ContainerState_CONTAINER_CREATED
	default:
		st.State = cri.ContainerState_CONTAINER_UNKNOWN
	}
	return st
}

// outputDrainWait bounds how long a status waits for an exited
// container's last output to reach its log.
const outputDrainWait = time.Second

// waitOutputWritten waits, up to limit, until the output of container id
// has been copied to its log and attached clients. The shim closes the
// output FIFOs only after the exit, so without it a container could be
// seen exited before its last lines are in its log (containerd's CRI
// waits for the IO too before it reports an exit).
func (r *Runtime) waitOutputWritten(id string, limit time.Duration) {
	r.mu.Lock()
	a := r.attached[id]
	r.mu.Unlock()
	if a == nil {
		return
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-a.done:
	case <-t.C:
	}
}

// oomKilled reads the container's memory cgroup (v1 or v2) for an OOM
// kill, for when the event has not been seen.
func (r *Runtime) oomKilled(id string) bool {
	rel := filepath.Join(CgroupParent, r.cfg.Namespace, id)
	for _, f := range []string{
		filepath.Join("/sys/fs/cgroup/memory", rel, "memory.oom_control"),
		filepath.Join("/sys/fs/cgroup", rel, "memory.events"),
	} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == "oom_kill" && v != "0" {
				return true
			}
		}
	}
	return false
}

func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout int64) (*cri.ExecSyncResponse, error) {
	ctx = r.ctx(ctx)
	c, err := r.load(ctx, id)
	if err != nil {
		return nil, err
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("container %s is not running: %w", id, err)
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return nil, err
	}
	pspec := *spec.Process
	pspec.Args = cmd
	pspec.Terminal = false
	var stdout, stderr syncBuffer
	execID := "exec-" + newID()[:12]
	proc, err := task.Exec(ctx, execID, &pspec, cio.NewCreator(cio.WithStreams(nil, &stdout, &stderr)))
	if err != nil {
		return nil, err
	}
	defer proc.Delete(context.WithoutCancel(ctx), containerd.WithProcessKill)
	exited, err := proc.Wait(ctx)
	if err != nil {
		return nil, err
	}
	if err := proc.Start(ctx); err != nil {
		return nil, err
	}
	var timer <-chan time.Time
	if timeout > 0 {
		timer = time.After(time.Duration(timeout) * time.Second)
	}
	select {
	case es := <-exited:
		proc.IO().Wait()
		return &cri.ExecSyncResponse{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: int32(es.ExitCode())}, nil
	case <-timer:
		_ = proc.Kill(ctx, syscall.SIGKILL)
		return nil, fmt.Errorf("exec timed out after %ds", timeout)
	case <-ctx.Done():
		_ = proc.Kill(context.WithoutCancel(ctx), syscall.SIGKILL)
		return nil, ctx.Err()
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}

func (r *Runtime) ReadLog(ctx context.Context, req *cri.ReadLogRequest, w io.Writer) error {
	st, err := r.ContainerStatus(ctx, req.ContainerId)
	if err != nil {
		return err
	}
	if st.LogPath == "" {
		return nil
	}
	return runtime.FollowFile(ctx, st.LogPath, req, w, func() bool {
		st, err := r.ContainerStatus(ctx, req.ContainerId)
		return err != nil || st.State != cri.ContainerState_CONTAINER_RUNNING
	})
}

// --- images ---

func (r *Runtime) criImage(ctx context.Context, img containerd.Image) *cri.Image {
	out := &cri.Image{RepoTags: []string{img.Name()}, Local: img.Labels()[LabelLocal] == "true"}
	if f, err := r.imageFacts(ctx, img); err == nil {
		out.Id, out.User, out.Size = f.id, f.user, f.size
	}
	out.RepoDigests = []string{img.Target().Digest.String()}
	return out
}

func (r *Runtime) ListImages(ctx context.Context) ([]*cri.Image, error) {
	ctx = r.ctx(ctx)
	imgs, err := r.client.ListImages(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[string]*cri.Image{}
	var out []*cri.Image
	for _, img := range imgs {
		ci := r.criImage(ctx, img)
		if prev, ok := byID[ci.Id]; ok {
			prev.RepoTags = append(prev.RepoTags, ci.RepoTags...)
			continue
		}
		byID[ci.Id] = ci
		out = append(out, ci)
	}
	return out, nil
}

func (r *Runtime) ImageStatus(ctx context.Context, ref string) (*cri.Image, error) {
	ctx = r.ctx(ctx)
	img, err := r.image(ctx, ref)
	if errors.Is(err, runtime.ErrImageNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return r.criImage(ctx, img), nil
}

func (r *Runtime) PullImage(ctx context.Context, ref string, insecure bool) (string, error) {
	ctx = r.ctx(ctx)
	name, err := runtime.NormalizeImage(ref)
	if err != nil {
		return "", err
	}
	img, err := r.client.Pull(ctx, name, containerd.WithPullUnpack, containerd.WithPullSnapshotter(r.cfg.Snapshotter),
		containerd.WithResolver(resolver(insecure)))
	if err != nil {
		if errdefs.IsNotFound(err) {
			return "", fmt.Errorf("pulling %s: %v: %w", name, err, runtime.ErrImageNotFound)
		}
		return "", fmt.Errorf("pulling %s: %w", name, err)
	}
	r.imageNames.forget(name) // before its event comes
	return r.criImage(ctx, img).Id, nil
}

func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	ctx = r.ctx(ctx)
	name, err := runtime.NormalizeImage(ref)
	if err != nil {
		return err
	}
	if img, err := r.client.GetImage(ctx, name); err == nil {
		r.forgetImage(img.Target().Digest)
	}
	if err := r.client.ImageService().Delete(ctx, name); err != nil && !errdefs.IsNotFound(err) {
		return err
	}
	r.imageNames.forget(name) // before its event comes
	return nil
}
