// Package fake is a Runtime without containers, for hollow nodes in scale
// tests: sandboxes and containers are records in memory, a started
// container is running until it is stopped, and delays and failures are
// configurable.
package fake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// Config sets the fake's behaviour. The zero value is instant and never fails.
type Config struct {
	// StartDelay is slept in StartContainer (default 0).
	StartDelay time.Duration
	// PullDelay is slept in PullImage (default 0).
	PullDelay time.Duration
	// Images are present from the start (normalized references).
	Images []string
	// MissingImages cannot be pulled: PullImage returns ErrImageNotFound.
	MissingImages []string
	// FailStart makes StartContainer fail for containers with this name.
	FailStart map[string]error
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Exec plays the commands run by Exec (default: exit 0 without
	// output); it returns the exit code.
	Exec func(opts runtime.ExecOptions) int32
}

// Runtime is the fake. Its zero value is not usable: call New.
type Runtime struct {
	cfg Config

	mu         sync.Mutex
	seq        int
	cidr       string
	sandboxes  map[string]*cri.PodSandbox
	containers map[string]*container
	images     map[string]*cri.Image
	missing    map[string]bool
	// subscribers get the container events (events.go); dropEvents is
	// how many of the next events to lose, as a lossy runtime would.
	subscribers map[*subscription]struct{}
	dropEvents  int
	eventsErr   error // GetContainerEvents fails with it (FailEvents)
}

type container struct {
	c      *cri.Container
	status *cri.ContainerStatus
	// logs is the container's log in the CRI format, written through stdout.
	logs   bytes.Buffer
	stdout io.WriteCloser
	// usage is what SetStats set; a running container has one process.
	usage *cri.ContainerStats
	// attached are the stdout writers of attached clients (Attach);
	// exited is closed when the container exits.
	attached map[*io.Writer]struct{}
	exited   chan struct{}
	// resources are the container's cgroup settings, from which a hollow
	// node derives plausible usage (hollowUsage).
	resources *cri.LinuxContainerResources
}

var _ runtime.Runtime = &Runtime{}

// New returns a fake runtime.
func New(cfg Config) *Runtime {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Runtime{cfg: cfg, sandboxes: map[string]*cri.PodSandbox{}, containers: map[string]*container{},
		images: map[string]*cri.Image{}, missing: map[string]bool{}, subscribers: map[*subscription]struct{}{}}
	for _, img := range cfg.Images {
		r.addImage(img)
	}
	for _, img := range cfg.MissingImages {
		if n, err := runtime.NormalizeImage(img); err == nil {
			r.missing[n] = true
		}
	}
	return r
}

func (r *Runtime) addImage(ref string) *cri.Image {
	n, err := runtime.NormalizeImage(ref)
	if err != nil {
		n = ref
	}
	img := &cri.Image{Id: "sha256:fake-" + n, RepoTags: []string{n}, Size: 1 << 20}
	r.images[n] = img
	return img
}

func (r *Runtime) nextID(prefix string) string {
	r.seq++
	return fmt.Sprintf("%s%08d", prefix, r.seq)
}

func (r *Runtime) Version(context.Context) (*cri.VersionResponse, error) {
	return &cri.VersionResponse{RuntimeName: "fake", RuntimeVersion: "0.1.0"}, nil
}

func (r *Runtime) UpdatePodCIDR(_ context.Context, cidr string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cidr = cidr
	return nil
}

func (r *Runtime) RunPodSandbox(_ context.Context, cfg *cri.PodSandboxConfig) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.nextID("sb")
	ip := ""
	if !cfg.HostNetwork {
		ip = fmt.Sprintf("10.%d.%d.%d", 200+(r.seq>>16)&0x1f, (r.seq>>8)&0xff, r.seq&0xff)
	}
	r.sandboxes[id] = &cri.PodSandbox{Id: id, Metadata: cfg.Metadata, State: cri.PodSandboxState_SANDBOX_READY,
		CreatedAt: r.cfg.Now().UnixNano(), Labels: cfg.Labels, Annotations: cfg.Annotations, Ip: ip}
	return id, nil
}

func (r *Runtime) StopPodSandbox(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, ok := r.sandboxes[id]
	if !ok {
		return fmt.Errorf("sandbox %s: %w", id, runtime.ErrNotFound)
	}
	sb.State = cri.PodSandboxState_SANDBOX_NOTREADY
	for _, c := range r.containers {
		if c.c.PodSandboxId == id {
			r.exit(c, 137, "Error")
		}
	}
	return nil
}

func (r *Runtime) RemovePodSandbox(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.sandboxes[id]; !ok {
		return nil // removing is idempotent, as in CRI
	}
	for cid, c := range r.containers {
		if c.c.PodSandboxId == id {
			delete(r.containers, cid)
			r.emit(c, cri.ContainerEventType_CONTAINER_DELETED_EVENT)
		}
	}
	delete(r.sandboxes, id)
	return nil
}

func (r *Runtime) ListPodSandbox(_ context.Context, podUID string) ([]*cri.PodSandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*cri.PodSandbox, 0, len(r.sandboxes))
	for _, sb := range r.sandboxes {
		if podUID == "" || sb.Metadata.GetUid() == podUID {
			out = append(out, sb)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out, nil
}

func (r *Runtime) CreateContainer(_ context.Context, sandboxID string, cfg *cri.ContainerConfig, _ *cri.PodSandboxConfig) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.sandboxes[sandboxID]; !ok {
		return "", fmt.Errorf("sandbox %s: %w", sandboxID, runtime.ErrNotFound)
	}
	ref, err := runtime.NormalizeImage(cfg.Image)
	if err != nil {
		return "", err
	}
	img, ok := r.images[ref]
	if !ok {
		return "", fmt.Errorf("image %s: %w", ref, runtime.ErrImageNotFound)
	}
	id := r.nextID("c")
	now := r.cfg.Now().UnixNano()
	c := &container{
		c: &cri.Container{Id: id, PodSandboxId: sandboxID, Metadata: cfg.Metadata, Image: ref, ImageRef: img.Id,
			State: cri.ContainerState_CONTAINER_CREATED, CreatedAt: now, Labels: cfg.Labels, Annotations: cfg.Annotations},
	}
	c.status = &cri.ContainerStatus{Id: id, Metadata: cfg.Metadata, State: cri.ContainerState_CONTAINER_CREATED,
		CreatedAt: now, Image: ref, ImageRef: img.Id, Labels: cfg.Labels, Annotations: cfg.Annotations, LogPath: cfg.LogPath}
	c.stdout = runtime.NewLogWriter(&c.logs, r.cfg.Now).Stream("stdout")
	c.attached = map[*io.Writer]struct{}{}
	c.exited = make(chan struct{})
	c.resources = cfg.Resources
	r.containers[id] = c
	r.emit(c, cri.ContainerEventType_CONTAINER_CREATED_EVENT)
	return id, nil
}

func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	if r.cfg.StartDelay > 0 {
		select {
		case <-time.After(r.cfg.StartDelay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	if err := r.cfg.FailStart[c.c.Metadata.GetName()]; err != nil {
		return err
	}
	if c.c.State != cri.ContainerState_CONTAINER_CREATED {
		return fmt.Errorf("container %s is %s, not created", id, c.c.State)
	}
	c.c.State = cri.ContainerState_CONTAINER_RUNNING
	c.status.State = cri.ContainerState_CONTAINER_RUNNING
	c.status.StartedAt = r.cfg.Now().UnixNano()
	r.emit(c, cri.ContainerEventType_CONTAINER_STARTED_EVENT)
	return nil
}

// exit ends a running container; r.mu is held.
func (r *Runtime) exit(c *container, code int32, reason string) {
	if c.c.State == cri.ContainerState_CONTAINER_EXITED {
		return
	}
	c.c.State = cri.ContainerState_CONTAINER_EXITED
	c.status.State = cri.ContainerState_CONTAINER_EXITED
	c.status.FinishedAt = r.cfg.Now().UnixNano()
	c.status.ExitCode = code
	c.status.Reason = reason
	close(c.exited)
	r.emit(c, cri.ContainerEventType_CONTAINER_STOPPED_EVENT)
}

// Exit makes a running container exit with code, as if its process ended.
func (r *Runtime) Exit(id string, code int32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	r.exit(c, code, reason)
	return nil
}

// WriteLog appends data to a container's log, as if it printed it on
// its standard output.
func (r *Runtime) WriteLog(id string, data string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.containers[id]; ok {
		_, _ = c.stdout.Write([]byte(data))
		for w := range c.attached {
			if _, err := (*w).Write([]byte(data)); err != nil {
				delete(c.attached, w)
			}
		}
	}
}

func (r *Runtime) StopContainer(_ context.Context, id string, _ int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	// The fake's processes honour SIGTERM at once: exit code 143.
	r.exit(c, 143, "Error")
	return nil
}

func (r *Runtime) RemoveContainer(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.containers[id]; ok {
		r.exit(c, 137, "Error") // removal kills a running container
		delete(r.containers, id)
		r.emit(c, cri.ContainerEventType_CONTAINER_DELETED_EVENT)
	}
	return nil
}

func (r *Runtime) ListContainers(_ context.Context, sandboxID string) ([]*cri.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*cri.Container
	for _, c := range r.containers {
		if sandboxID == "" || c.c.PodSandboxId == sandboxID {
			out = append(out, proto.Clone(c.c).(*cri.Container))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out, nil
}

func (r *Runtime) ContainerStatus(_ context.Context, id string) (*cri.ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	return proto.Clone(c.status).(*cri.ContainerStatus), nil
}

func (r *Runtime) ExecSync(_ context.Context, id string, _ []string, _ int64) (*cri.ExecSyncResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	if c.c.State != cri.ContainerState_CONTAINER_RUNNING {
		return nil, fmt.Errorf("container %s is not running", id)
	}
	return &cri.ExecSyncResponse{}, nil
}

func (r *Runtime) Exec(_ context.Context, id string, opts runtime.ExecOptions) (int32, error) {
	r.mu.Lock()
	c, ok := r.containers[id]
	running := ok && c.c.State == cri.ContainerState_CONTAINER_RUNNING
	r.mu.Unlock()
	switch {
	case !ok:
		return 0, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	case !running:
		return 0, fmt.Errorf("container %s is not running", id)
	case r.cfg.Exec == nil:
		return 0, nil
	}
	return r.cfg.Exec(opts), nil
}

// Attach copies what WriteLog writes to opts.Stdout until the container
// exits; a fake process reads no input.
func (r *Runtime) Attach(ctx context.Context, id string, opts runtime.ExecOptions) error {
	r.mu.Lock()
	c, ok := r.containers[id]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	if c.c.State != cri.ContainerState_CONTAINER_RUNNING {
		r.mu.Unlock()
		return fmt.Errorf("container %s is not running", id)
	}
	w := &opts.Stdout
	if opts.Stdout != nil {
		c.attached[w] = struct{}{}
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(c.attached, w)
		r.mu.Unlock()
	}()
	select {
	case <-c.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PortForward: a hollow node has no network namespace to reach.
func (r *Runtime) PortForward(_ context.Context, sandboxID string, _ int32, _ io.ReadWriter) error {
	r.mu.Lock()
	_, ok := r.sandboxes[sandboxID]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("sandbox %s: %w", sandboxID, runtime.ErrNotFound)
	}
	return fmt.Errorf("port-forward to a hollow node: %w", errors.ErrUnsupported)
}

func (r *Runtime) ReadLog(ctx context.Context, req *cri.ReadLogRequest, w io.Writer) error {
	r.mu.Lock()
	c, ok := r.containers[req.ContainerId]
	var data []byte
	if ok {
		data = append(data, c.logs.Bytes()...)
	}
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("container %s: %w", req.ContainerId, runtime.ErrNotFound)
	}
	_, err := runtime.CopyLog(data, req, w)
	return err
}

// SetStats sets the usage ListContainerStats reports for container
// st.ContainerId (tests drive the eviction manager with it).
func (r *Runtime) SetStats(st *cri.ContainerStats) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[st.ContainerId]
	if !ok {
		return fmt.Errorf("container %s: %w", st.ContainerId, runtime.ErrNotFound)
	}
	c.usage = proto.Clone(st).(*cri.ContainerStats)
	return nil
}

func (r *Runtime) ListContainerStats(context.Context) ([]*cri.ContainerStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Now()
	out := make([]*cri.ContainerStats, 0, len(r.containers))
	for _, c := range r.containers {
		st := hollowUsage(c, now)
		if c.usage != nil {
			set := proto.Clone(c.usage).(*cri.ContainerStats)
			if set.CpuUsageCoreNanoSeconds == 0 {
				set.CpuUsageCoreNanoSeconds = st.CpuUsageCoreNanoSeconds
			}
			if set.MemoryUsageBytes < set.MemoryWorkingSetBytes {
				set.MemoryUsageBytes = set.MemoryWorkingSetBytes
			}
			set.Timestamp = st.Timestamp
			st = set
		}
		if c.c.State != cri.ContainerState_CONTAINER_RUNNING {
			st.MemoryWorkingSetBytes, st.MemoryUsageBytes, st.ProcessCount = 0, 0, 0
		} else if st.ProcessCount == 0 {
			st.ProcessCount = 1
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ContainerId < out[j].ContainerId })
	return out, nil
}

// hollowUsage is what a hollow node reports for a container that SetStats
// did not set: usage that follows its spec rather than a constant. It uses
// a tenth of its CPU request (cgroup shares; 1m without one, never above
// its quota), accumulated over the time it ran, and a working set of a
// quarter of its memory limit (4Mi without one), plus 1Mi of page cache.
func hollowUsage(c *container, now time.Time) *cri.ContainerStats {
	st := &cri.ContainerStats{ContainerId: c.c.Id, Timestamp: now.UnixNano()}
	if c.status.StartedAt == 0 {
		return st
	}
	nanoCores := int64(1_000_000) // 1m
	res := c.resources
	if res != nil && res.CpuShares > 2 {
		nanoCores = max(nanoCores, res.CpuShares*1_000_000_000/1024/10)
	}
	if res != nil && res.CpuQuota > 0 && res.CpuPeriod > 0 {
		nanoCores = min(nanoCores, res.CpuQuota*1_000_000_000/res.CpuPeriod)
	}
	end := now
	if c.status.FinishedAt != 0 {
		end = time.Unix(0, c.status.FinishedAt)
	}
	if ran := end.Sub(time.Unix(0, c.status.StartedAt)); ran > 0 {
		st.CpuUsageCoreNanoSeconds = uint64(ran.Seconds() * float64(nanoCores))
	}
	st.MemoryWorkingSetBytes = 4 << 20
	if res != nil && res.MemoryLimitInBytes > 0 {
		st.MemoryWorkingSetBytes = uint64(res.MemoryLimitInBytes / 4)
	}
	st.MemoryUsageBytes = st.MemoryWorkingSetBytes + 1<<20
	return st
}

func (r *Runtime) ListImages(context.Context) ([]*cri.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*cri.Image, 0, len(r.images))
	for _, img := range r.images {
		out = append(out, img)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out, nil
}

func (r *Runtime) ImageStatus(_ context.Context, ref string) (*cri.Image, error) {
	n, err := runtime.NormalizeImage(ref)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.images[n], nil
}

func (r *Runtime) PullImage(ctx context.Context, ref string, _ bool) (string, error) {
	n, err := runtime.NormalizeImage(ref)
	if err != nil {
		return "", err
	}
	if r.cfg.PullDelay > 0 {
		select {
		case <-time.After(r.cfg.PullDelay):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.missing[n] {
		return "", fmt.Errorf("pulling %s: %w", n, runtime.ErrImageNotFound)
	}
	return r.addImage(n).Id, nil
}

func (r *Runtime) RemoveImage(_ context.Context, ref string) error {
	n, err := runtime.NormalizeImage(ref)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.images, n)
	return nil
}
