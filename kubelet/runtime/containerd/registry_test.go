package containerd_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/remotes/docker"
	"github.com/google/go-containerregistry/pkg/registry"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// TestPullFromRegistry pushes busybox to a real registry server on
// loopback (go-containerregistry's, plain HTTP) and pulls it back through
// the runtime, as a node does when a registry is reachable.
func TestPullFromRegistry(t *testing.T) {
	rt := newRuntime(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := host + "/minik/busybox:1"

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := containerd.New(testDaemon(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nsCtx := namespaces.WithNamespace(ctx, rt.Namespace())
	img, err := c.GetImage(nsCtx, "docker.io/library/busybox:latest")
	if err != nil {
		t.Fatal(err)
	}
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: docker.ConfigureDefaultRegistries(docker.WithPlainHTTP(docker.MatchAllHosts))})
	if err := c.Push(nsCtx, ref, img.Target(), containerd.WithResolver(resolver)); err != nil {
		t.Fatalf("pushing to the test registry: %v", err)
	}

	for _, tc := range []struct {
		name     string
		ref      string
		insecure bool
		wantErr  error
	}{
		{"an image is pulled from a plain-HTTP registry on loopback", ref, false, nil},
		{"an insecure registry is pulled from over plain HTTP", ref, true, nil},
		{"a tag the registry lacks is not found", host + "/minik/busybox:nope", true, runtime.ErrImageNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = rt.RemoveImage(ctx, tc.ref)
			id, err := rt.PullImage(ctx, tc.ref, tc.insecure)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("PullImage = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st, err := rt.ImageStatus(ctx, tc.ref)
			if err != nil || st == nil || st.Id != id || st.Local {
				t.Fatalf("ImageStatus after pull = %+v, %v; want id %s, not local", st, err, id)
			}
			// The pulled image runs.
			sbCfg := &cri.PodSandboxConfig{Metadata: &cri.PodSandboxMetadata{Name: "pulled", Namespace: "default", Uid: "pulled"}, LogDirectory: t.TempDir()}
			sb, err := rt.RunPodSandbox(ctx, sbCfg)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.RemovePodSandbox(context.Background(), sb)
			cid, err := rt.CreateContainer(ctx, sb, &cri.ContainerConfig{Metadata: &cri.ContainerMetadata{Name: "c"}, Image: tc.ref, Command: []string{"true"}, LogPath: "c.log"}, sbCfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := rt.StartContainer(ctx, cid); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if st, err := rt.ContainerStatus(ctx, cid); err == nil && st.State == cri.ContainerState_CONTAINER_EXITED {
					if st.ExitCode != 0 {
						t.Errorf("exit code %d", st.ExitCode)
					}
					return
				}
			}
			t.Error("the container from the pulled image did not exit")
		})
	}
}
