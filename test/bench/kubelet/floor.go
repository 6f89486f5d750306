package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	containerd "github.com/containerd/containerd"
	runcoptions "github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/oci"
	"github.com/opencontainers/runtime-spec/specs-go"

	ctdrt "minik/kubelet/runtime/containerd"
)

// floorNamespace keeps the floor's containers away from the kubelet's.
const floorNamespace = "minik-bench-floor"

// runtimeFloor starts n containers of the busybox image straight through
// containerd and runc, conc at a time, with the calls `ctr run -d
// --null-io` makes (a container with a new snapshot and spec, a task
// without output FIFOs, its start) and
// nothing of minik: no API object, no kubelet, no network namespace or
// CNI. It returns each one's latency from the first call to the started
// task, and the CPU time per container of each meter: what containerd,
// its shims and runc alone cost here, the part of a pod start minik
// cannot make cheaper.
//
// With netDir set, each container first gets a pod's network (floornet.go),
// its namespaces bind-mounted under netDir: the floor of a runtime that
// gives every pod one.
func runtimeFloor(ctx context.Context, address, archive string, n, conc int, meters []cpuMeter, netDir string) ([]time.Duration, map[string]time.Duration, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, nil, err
	}
	names, err := ctdrt.Import(ctx, address, floorNamespace, f)
	f.Close()
	if err != nil {
		return nil, nil, err
	}
	if len(names) == 0 {
		return nil, nil, errors.New("the busybox archive holds no image")
	}
	client, err := containerd.New(address, containerd.WithDefaultNamespace(floorNamespace))
	if err != nil {
		return nil, nil, err
	}
	defer client.Close()
	ctx = namespaces.WithNamespace(ctx, floorNamespace)
	img, err := client.GetImage(ctx, names[0])
	if err != nil {
		return nil, nil, err
	}

	var fnet *floorNet
	if netDir != "" {
		if fnet, err = newFloorNet(netDir); err != nil {
			return nil, nil, err
		}
	}
	var mu sync.Mutex
	var started []containerd.Task
	var made []containerd.Container
	defer func() { // leave nothing behind, whatever happened
		ctx := context.WithoutCancel(ctx)
		for _, t := range started {
			_, _ = t.Delete(ctx, containerd.WithProcessKill)
		}
		for _, c := range made {
			_ = c.Delete(ctx, containerd.WithSnapshotCleanup)
		}
		if fnet != nil {
			fnet.close()
		}
	}()
	startOne := func(i int) error {
		id := fmt.Sprintf("floor-%d-%d", conc, i)
		specOpts := []oci.SpecOpts{oci.WithImageConfig(img), oci.WithProcessArgs("sleep", "3600")}
		if fnet != nil {
			ns, err := fnet.add(i)
			if err != nil {
				return err
			}
			specOpts = append(specOpts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: ns}))
		}
		c, err := client.NewContainer(ctx, id,
			containerd.WithImage(img),
			containerd.WithNewSnapshot(id, img),
			containerd.WithRuntime("io.containerd.runc.v2", &runcoptions.Options{Root: ctdrt.RuncRoot}),
			containerd.WithNewSpec(specOpts...),
		)
		if err != nil {
			return err
		}
		mu.Lock()
		made = append(made, c)
		mu.Unlock()
		t, err := c.NewTask(ctx, cio.NullIO)
		if err != nil {
			return err
		}
		mu.Lock()
		started = append(started, t)
		mu.Unlock()
		return t.Start(ctx)
	}

	lat, cpu, err := closedLoop(ctx, n, conc, meters, startOne)
	if err != nil {
		return nil, nil, fmt.Errorf("runtime floor: %w", err)
	}
	return lat, cpu, nil
}
