package fake_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	"minik/kubelet/runtime"
	"minik/kubelet/runtime/conformance"
	"minik/kubelet/runtime/fake"
	"minik/proto/cri"
)

var opts = conformance.Options{Image: "busybox", MissingImage: "example.invalid/missing:1"}

func newFake() *fake.Runtime {
	return fake.New(fake.Config{Images: []string{"busybox"}, MissingImages: []string{opts.MissingImage}})
}

func TestConformance(t *testing.T) {
	conformance.Run(t, func(*testing.T) runtime.Runtime { return newFake() }, opts)
}

// TestConformanceOverGRPC runs the suite through the mini-CRI socket, so
// the client and server adapters are checked as well.
func TestConformanceOverGRPC(t *testing.T) {
	conformance.Run(t, func(t *testing.T) runtime.Runtime {
		sock := filepath.Join(t.TempDir(), "cri.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go runtime.Serve(ctx, l, newFake())
		r, err := runtime.Dial(sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}, opts)
}

// TestEvents: an exit a test triggers is an event, a dropped event is
// not sent, and a runtime that ends the streams ends them over gRPC too.
func TestEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := newFake()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go runtime.Serve(ctx, l, f)
	remote, err := runtime.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	for _, tc := range []struct {
		name string
		rt   runtime.Runtime
	}{{"direct", f}, {"over gRPC", remote}} {
		t.Run(tc.name, func(t *testing.T) {
			stream, err := tc.rt.GetContainerEvents(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sbCfg := &cri.PodSandboxConfig{Metadata: &cri.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u1"}}
			sb, _ := f.RunPodSandbox(ctx, sbCfg)
			f.DropEvents(1) // the created event is lost
			id, err := f.CreateContainer(ctx, sb, &cri.ContainerConfig{Metadata: &cri.ContainerMetadata{Name: "c"}, Image: "busybox"}, sbCfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.StartContainer(ctx, id); err != nil {
				t.Fatal(err)
			}
			if err := f.Exit(id, 1); err != nil {
				t.Fatal(err)
			}
			for _, want := range []cri.ContainerEventType{cri.ContainerEventType_CONTAINER_STARTED_EVENT, cri.ContainerEventType_CONTAINER_STOPPED_EVENT} {
				ev, err := stream.Recv()
				if err != nil {
					t.Fatal(err)
				}
				if ev.ContainerId != id || ev.ContainerEventType != want || ev.PodSandboxMetadata.GetUid() != "u1" {
					t.Errorf("event %+v, want %v of %s in pod u1", ev, want, id)
				}
			}
			f.EndEventStreams()
			if ev, err := stream.Recv(); err == nil {
				t.Errorf("after EndEventStreams: event %+v, want the stream's end", ev)
			}
		})
	}
}

// oldServer is a mini-CRI server from before ListContainerStatuses: it
// answers the listing and each status, and Unimplemented to the rest.
type oldServer struct {
	cri.UnimplementedRuntimeServiceServer
	rt *fake.Runtime
}

func (s oldServer) ListContainers(ctx context.Context, req *cri.ListContainersRequest) (*cri.ListContainersResponse, error) {
	cs, err := s.rt.ListContainers(ctx, req.PodSandboxId)
	return &cri.ListContainersResponse{Containers: cs}, err
}

func (s oldServer) ContainerStatus(ctx context.Context, req *cri.ContainerStatusRequest) (*cri.ContainerStatusResponse, error) {
	st, err := s.rt.ContainerStatus(ctx, req.ContainerId)
	return &cri.ContainerStatusResponse{Status: st}, err
}

// TestContainerStatusesFromAnOlderServer: a server without the one call
// is asked for the listing and each status instead.
func TestContainerStatusesFromAnOlderServer(t *testing.T) {
	ctx := context.Background()
	rt := newFake()
	sbCfg := &cri.PodSandboxConfig{Metadata: &cri.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u"}, LogDirectory: t.TempDir()}
	sb, err := rt.RunPodSandbox(ctx, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	id, err := rt.CreateContainer(ctx, sb, &cri.ContainerConfig{Metadata: &cri.ContainerMetadata{Name: "c"}, Image: "busybox", LogPath: "c/0.log"}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	cri.RegisterRuntimeServiceServer(s, oldServer{rt: rt})
	go s.Serve(l)
	defer s.Stop()
	r, err := runtime.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sts, err := runtime.ContainerStatuses(ctx, r, sb)
	if err != nil || len(sts) != 1 || sts[0].Id != id {
		t.Fatalf("statuses %v, %v; want the one of %s", sts, err, id)
	}
}
