package fake_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"minik/kubelet/runtime"
	"minik/kubelet/runtime/conformance"
	"minik/kubelet/runtime/fake"
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
