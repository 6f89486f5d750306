package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/client"
	"minik/internal/etcd"
	"minik/internal/pki"
)

func benchPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "busybox", Command: []string{"sleep", "3600"},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
		}}},
	}
}

// BenchmarkCreatePod creates pods from 16 goroutines over 2 connections
// through minik/client, TLS and HTTP/2 included. Profile it with
//
//	go test ./apiserver -run '^$' -bench CreatePod -benchtime 5s -cpuprofile /tmp/cpu.out
func BenchmarkCreatePod(b *testing.B) {
	benchCreate(b, func(ctx context.Context, c *client.Client, n int64) error {
		_, err := c.Pods().Create(ctx, benchPod("bench", fmt.Sprintf("p-%d", n)), metav1.CreateOptions{})
		return err
	})
}

// BenchmarkCreateEvent creates Events as a scheduler's recorder does: a
// Scheduled event per pod (stored with a lease, for the event TTL).
func BenchmarkCreateEvent(b *testing.B) {
	benchCreate(b, func(ctx context.Context, c *client.Client, n int64) error {
		name := fmt.Sprintf("p-%d", n)
		now := metav1.Now()
		_, err := c.Events().Create(ctx, &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", name, now.UnixNano()), Namespace: "bench"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "bench", Name: name,
				UID: "0b7e7d2c-6f6e-4f2e-9d43-6d1e3b2f4a5c", ResourceVersion: "12345"},
			Reason: "Scheduled", Message: fmt.Sprintf("Successfully assigned bench/%s to node-%d", name, n%500),
			Type: corev1.EventTypeNormal, FirstTimestamp: now, LastTimestamp: now, Count: 1,
			Source:              corev1.EventSource{Component: "default-scheduler", Host: "bench"},
			ReportingController: "default-scheduler", ReportingInstance: "bench",
		}, metav1.CreateOptions{})
		return err
	})
}

// benchCreate runs create from 16 goroutines over 2 connections and
// reports the CPU per create.
func benchCreate(b *testing.B, create func(ctx context.Context, c *client.Client, n int64) error) {
	ts := startTestServer(b)
	clients := []*client.Client{ts.client(b), ts.client(b)}
	ctx := context.Background()
	if _, err := clients[0].Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var seq, worker atomic.Int64
	b.SetParallelism(8) // 16 goroutines on 2 CPUs
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := clients[worker.Add(1)%int64(len(clients))]
		for pb.Next() {
			if err := create(ctx, c, seq.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	// CPU time is steadier than wall time when the disk's fsync latency
	// varies; it counts server, etcd and client together.
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU returns the user and system CPU time this process used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEtcdPut is the baseline of BenchmarkCreatePod: raw puts of a
// pod-sized value from 16 goroutines to an embedded member, in-process.
func BenchmarkEtcdPut(b *testing.B) {
	member, cli, err := etcd.StartEmbedded(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer member.Close()
	defer cli.Close()
	value := string(make([]byte, 1000)) // about a stored bench pod
	var seq atomic.Int64
	b.SetParallelism(8)
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := cli.Put(context.Background(), fmt.Sprintf("/registry/bench/%d", seq.Add(1)), value); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkNew measures the start-up work of New: the handlers, the
// stores and the OpenAPI documents (built once, eagerly).
func BenchmarkNew(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := New(Config{Etcd: &clientv3.Client{}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStartToReady measures New and Run until Ready on a running
// etcd (the built-in objects exist after the first round).
func BenchmarkStartToReady(b *testing.B) {
	member, cli, err := etcd.StartEmbedded(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer member.Close()
	defer cli.Close()
	dir := b.TempDir()
	ca, _ := pki.EnsureCA(dir)
	cert, key, _ := ca.EnsureServing(dir, "apiserver", nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		srv, err := New(Config{Etcd: cli, Listener: ln, TLSCertFile: cert, TLSKeyFile: key,
			ClientCAFile: filepath.Join(dir, "ca.crt"), CompactionInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx) }()
		select {
		case <-srv.Ready():
		case err := <-done:
			b.Fatal(err)
		}
		b.StopTimer()
		cancel()
		<-done
		time.Sleep(300 * time.Millisecond) // let work left in the background end
		b.StartTimer()
	}
}

// BenchmarkWatchFanout creates pods while 100 watchers (one connection
// each) read them; each op is one create, delivered 100 times.
func BenchmarkWatchFanout(b *testing.B) {
	const watchers = 100
	ts := startTestServer(b)
	c := ts.client(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var delivered atomic.Int64
	for i := 0; i < watchers; i++ {
		hc := &http.Client{Transport: client.NewTransport(ts.config.TLS)}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.config.Host+"/api/v1/namespaces/bench/pods?watch=true&resourceVersion=0", nil)
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			defer resp.Body.Close()
			r := bufio.NewReaderSize(resp.Body, 64<<10)
			for {
				line, err := r.ReadSlice('\n')
				if bytes.HasPrefix(line, []byte(`{"type":"ADDED"`)) {
					delivered.Add(1)
				}
				if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
					return
				}
			}
		}()
	}
	var seq atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Pods().Create(ctx, benchPod("bench", fmt.Sprintf("p-%d", seq.Add(1))), metav1.CreateOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	for deadline := time.Now().Add(30 * time.Second); delivered.Load() < seq.Load()*watchers && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(delivered.Load())/float64(seq.Load()), "deliveries/op")
}

// BenchmarkListPods reads a list of 5,000 pods as JSON and protobuf
// (without gzip), TLS and HTTP/2 included. Profile it with
//
//	go test ./apiserver -run '^$' -bench ListPods -cpuprofile /tmp/cpu.out
func BenchmarkListPods(b *testing.B) {
	ts := startTestServer(b)
	c := ts.client(b)
	ctx := context.Background()
	if _, err := c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for i := range 5000 {
		if _, err := c.Pods().Create(ctx, benchPod("bench", fmt.Sprintf("p-%04d", i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	hc := &http.Client{Transport: client.NewTransport(ts.config.TLS)}
	for _, accept := range []string{"application/json", protobufMediaType} {
		b.Run(accept, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodGet, ts.config.Host+"/api/v1/namespaces/bench/pods", nil)
				req.Header.Set("Accept", accept)
				req.Header.Set("Accept-Encoding", "identity")
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				b.SetBytes(n)
			}
		})
	}
}

// BenchmarkPatchPodStatus sends the scheduler's strategic-merge status
// patch (a condition and a nomination) to 1,000 pods in turn, from 16
// goroutines: the patch path of preemption.
func BenchmarkPatchPodStatus(b *testing.B) {
	const pods = 1000
	ts := startTestServer(b)
	clients := []*client.Client{ts.client(b), ts.client(b)}
	ctx := context.Background()
	if _, err := clients[0].Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for i := range pods {
		if _, err := clients[0].Pods().Create(ctx, benchPod("bench", fmt.Sprintf("p-%d", i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	var seq, worker atomic.Int64
	b.SetParallelism(8)
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := clients[worker.Add(1)%int64(len(clients))]
		for pb.Next() {
			n := seq.Add(1)
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/500 nodes are available: %d","lastTransitionTime":null}],"nominatedNodeName":"node-%d"}}`, n, n%500)
			if _, err := c.Pods().Patch(ctx, "bench", fmt.Sprintf("p-%d", n%pods), types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}
