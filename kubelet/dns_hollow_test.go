package kubelet_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/testcluster"
	"minik/kubelet"
	"minik/kubelet/runtime/fake"
)

// TestHollowNodeWithoutClusterDNS runs a kubelet with no cluster DNS
// (--cluster-dns ""): a ClusterFirst pod gets the host's resolvers from
// --resolv-conf, and the kubelet says why on the node and on the pod.
// The apiserver serves no services yet, so the pod also shows that pods
// start without service variables rather than wait.
func TestHollowNodeWithoutClusterDNS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts minik up; skipped with -short")
	}
	c := testcluster.Start(t)
	const node = "hollow-nodns"
	root := t.TempDir()
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("# the node's\nnameserver 192.0.2.1\nsearch lan.example.\noptions rotate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := fake.New(fake.Config{Images: []string{"busybox"}})
	startHollowKubelet(t, c, kubelet.Config{NodeName: node, Runtime: rt, RootDir: root, ClusterDNS: []string{}, ResolvConf: resolv})
	cs := c.Clientset()
	bg := context.Background()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nodns", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, DNSPolicy: corev1.DNSClusterFirst,
			Containers: []corev1.Container{{Name: "main", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent}}}}
	created, err := cs.CoreV1().Pods("default").Create(bg, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = cs.CoreV1().Pods("default").Delete(bg, "nodns", metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	waitUntil(t, 20*time.Second, func() bool {
		p, err := cs.CoreV1().Pods("default").Get(bg, "nodns", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	})
	got, err := os.ReadFile(filepath.Join(root, "pods", string(created.UID), "resolv.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "search lan.example\nnameserver 192.0.2.1\noptions rotate\n"; string(got) != want {
		t.Errorf("resolv.conf:\n%s\nwant the host's:\n%s", got, want)
	}
	const msg = `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`
	wantEvents := map[string]string{
		"Node/" + node:   msg,
		"Pod/" + "nodns": `pod: "nodns_default(` + string(created.UID) + `)". ` + msg,
	}
	waitUntil(t, 10*time.Second, func() bool {
		list, err := cs.CoreV1().Events("default").List(bg, metav1.ListOptions{})
		if err != nil {
			return false
		}
		found := 0
		for _, ev := range list.Items {
			if m, ok := wantEvents[ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name]; ok && ev.Reason == "MissingClusterDNS" &&
				ev.Type == corev1.EventTypeWarning && ev.Message == m {
				found++
			}
		}
		return found == len(wantEvents)
	})
}
