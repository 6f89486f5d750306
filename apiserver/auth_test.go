package apiserver

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// mirrorPod is a pod a kubelet may create for a static pod on node.
func mirrorPod(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
		Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "hash"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

// A kubelet may write its pods' status and mirror pods, but not place,
// evict or exec into pods, as with Kubernetes' node authorizer.
func TestNodesMayNotBindEvictOrExec(t *testing.T) {
	ts := startTestServer(t)
	node := ts.clientAs(t, "system:node:a", "system:nodes")
	ctx := t.Context()
	created, err := node.Pods().Create(ctx, mirrorPod("m", "a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a node creating a mirror pod: %v", err)
	}
	created.Status.Phase = corev1.PodRunning
	if _, err := node.Pods().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("a node updating pod status: %v", err)
	}
	other := mirrorPod("unbound", "")
	if _, err := ts.client(t).Pods().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"bind": func() error {
			return node.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "unbound", Namespace: "default"},
				Target: corev1.ObjectReference{Kind: "Node", Name: "a"}}, metav1.CreateOptions{})
		},
		"evict": func() error {
			return node.Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "default"}})
		},
		"exec": func() error {
			return node.Do(ctx, "GET", "/api/v1/namespaces/default/pods/m/exec", url.Values{"command": {"ls"}}, nil, nil)
		},
		"portforward": func() error {
			return node.Do(ctx, "POST", "/api/v1/namespaces/default/pods/m/portforward", nil, nil, nil)
		},
		"log": func() error {
			return node.Do(ctx, "GET", "/api/v1/namespaces/default/pods/m/log", nil, nil, nil)
		},
	} {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s: err %v, want Forbidden", name, err)
		}
	}
}

// The attack review's first hole: with system:node:ka one could act as
// cluster admin. Each call below is one it made; each must now be
// refused as Kubernetes' node authorizer and NodeRestriction refuse it,
// while the calls a kubelet needs still work.
func TestNodeCredentialIsNotClusterRoot(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	admin := ts.client(t)
	ka := ts.clientAs(t, "system:node:ka", "system:nodes")

	mustCreate(t, func() error {
		_, err := admin.Secrets().Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "used", Namespace: "default"}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := admin.Secrets().Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default"}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := admin.ConfigMaps().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default"}}, metav1.CreateOptions{})
		return err
	})
	onKA := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-ka", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "ka",
		Containers: []corev1.Container{{Name: "c", Image: "busybox",
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}}},
		Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "used"}}}}}}
	onKB := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-kb", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "kb",
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "other"}}}}}}
	for _, p := range []*corev1.Pod{onKA, onKB} {
		mustCreate(t, func() error { _, err := admin.Pods().Create(ctx, p, metav1.CreateOptions{}); return err })
	}
	mustCreate(t, func() error {
		_, err := admin.Leases().Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kb", Namespace: "kube-node-lease"}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := admin.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kb"}}, metav1.CreateOptions{})
		return err
	})

	hostRoot := func(name, ns, node string, mirror bool) *corev1.Pod {
		priv := true
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: &priv}}},
			Volumes:    []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}}}
		if mirror {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		}
		return p
	}
	withSecret := mirrorPod("mirror-secret", "ka")
	withSecret.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "used"}}}}
	withSA := mirrorPod("mirror-sa", "ka")
	withSA.Spec.ServiceAccountName = "default"
	nodeWith := func(name string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	patchNode := func(patch string) error {
		_, err := ka.Nodes().Patch(ctx, "", "ka", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	lease := func(name, ns string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	}
	list := func(res, fieldSelector string) error {
		q := url.Values{}
		if fieldSelector != "" {
			q.Set("fieldSelector", fieldSelector)
		}
		return ka.Do(ctx, "GET", "/api/v1/"+res, q, nil, nil)
	}
	setStatus := func(name string) error {
		p, err := admin.Pods().Get(ctx, "default", name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.Phase = corev1.PodFailed
		_, err = ka.Pods().UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	}

	// In order: allowed calls first, since some create what later ones use.
	steps := []struct {
		name    string
		call    func() error
		allowed bool
	}{
		{"registers its own Node", func() error {
			_, err := ka.Nodes().Create(ctx, nodeWith("ka", map[string]string{"kubernetes.io/hostname": "ka"}), metav1.CreateOptions{})
			return err
		}, true},
		{"creates a Node under another name", func() error {
			_, err := ka.Nodes().Create(ctx, nodeWith("kc", nil), metav1.CreateOptions{})
			return err
		}, false},
		{"registers with a node-restriction label", func() error {
			_, err := ka.Nodes().Create(ctx, nodeWith("ka2", map[string]string{"node-restriction.kubernetes.io/pci": "true"}), metav1.CreateOptions{})
			return err
		}, false},
		{"labels its own Node under node-restriction.kubernetes.io/", func() error {
			return patchNode(`{"metadata":{"labels":{"node-restriction.kubernetes.io/pci":"true"}}}`)
		}, false},
		{"gives itself the control-plane role label", func() error {
			return patchNode(`{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`)
		}, false},
		{"sets a label of its own namespace", func() error {
			return patchNode(`{"metadata":{"labels":{"node.kubernetes.io/exclude-from-external-load-balancers":"true","team":"a"}}}`)
		}, true},
		{"removes its own taints", func() error {
			return patchNode(`{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}`)
		}, false},
		{"changes another Node", func() error {
			_, err := ka.Nodes().Patch(ctx, "", "kb", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
			return err
		}, false},
		{"reads its own Node", func() error { _, err := ka.Nodes().Get(ctx, "", "ka", metav1.GetOptions{}); return err }, true},
		{"reads another Node", func() error { _, err := ka.Nodes().Get(ctx, "", "kb", metav1.GetOptions{}); return err }, false},
		{"lists every Node", func() error { return list("nodes", "") }, false},
		{"lists its own Node by name", func() error { return list("nodes", "metadata.name=ka") }, true},

		{"creates a privileged host-root pod in kube-system bound to kb", func() error {
			_, err := ka.Pods().Create(ctx, hostRoot("root", "kube-system", "kb", false), metav1.CreateOptions{})
			return err
		}, false},
		{"creates a mirror pod bound to kb", func() error {
			_, err := ka.Pods().Create(ctx, hostRoot("root", "default", "kb", true), metav1.CreateOptions{})
			return err
		}, false},
		{"creates a regular pod bound to itself", func() error {
			_, err := ka.Pods().Create(ctx, hostRoot("root", "default", "ka", false), metav1.CreateOptions{})
			return err
		}, false},
		{"creates a mirror pod that reads a secret", func() error {
			_, err := ka.Pods().Create(ctx, withSecret, metav1.CreateOptions{})
			return err
		}, false},
		{"creates a mirror pod with a service account", func() error {
			_, err := ka.Pods().Create(ctx, withSA, metav1.CreateOptions{})
			return err
		}, false},
		{"creates a mirror pod owned by an earlier Node of its name", func() error {
			p := mirrorPod("static-old", "ka")
			ctrl := true
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "ka", UID: "stale", Controller: &ctrl}}
			_, err := ka.Pods().Create(ctx, p, metav1.CreateOptions{})
			return err
		}, false},
		{"creates a mirror pod owned by its Node", func() error {
			n, err := admin.Nodes().Get(ctx, "", "ka", metav1.GetOptions{})
			if err != nil {
				return err
			}
			p := mirrorPod("static-owned", "ka")
			ctrl := true
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "ka", UID: n.UID, Controller: &ctrl}}
			_, err = ka.Pods().Create(ctx, p, metav1.CreateOptions{})
			return err
		}, true},
		{"creates a mirror pod of its own", func() error {
			_, err := ka.Pods().Create(ctx, mirrorPod("static-ka", "ka"), metav1.CreateOptions{})
			return err
		}, true},

		{"reads the log of kb's pod", func() error {
			return ka.Do(ctx, "GET", "/api/v1/namespaces/default/pods/on-kb/log", nil, nil, nil)
		}, false},
		{"reads kb's pod", func() error { _, err := ka.Pods().Get(ctx, "default", "on-kb", metav1.GetOptions{}); return err }, false},
		{"reads its own pod", func() error { _, err := ka.Pods().Get(ctx, "default", "on-ka", metav1.GetOptions{}); return err }, true},
		{"lists every pod", func() error { return list("pods", "") }, false},
		{"lists kb's pods", func() error { return list("pods", "spec.nodeName=kb") }, false},
		{"lists its own pods", func() error { return list("pods", "spec.nodeName=ka") }, true},
		{"rewrites the status of kb's pod", func() error { return setStatus("on-kb") }, false},
		{"writes the status of its own pod", func() error { return setStatus("on-ka") }, true},
		{"deletes kb's pod", func() error { return ka.Pods().Delete(ctx, "default", "on-kb", metav1.DeleteOptions{}) }, false},

		{"reads a secret no pod of its uses", func() error { _, err := ka.Secrets().Get(ctx, "default", "other", metav1.GetOptions{}); return err }, false},
		{"lists every secret", func() error { return list("secrets", "") }, false},
		{"reads the secret its pod mounts", func() error { _, err := ka.Secrets().Get(ctx, "default", "used", metav1.GetOptions{}); return err }, true},
		{"watches the secret its pod mounts by name", func() error { return list("namespaces/default/secrets", "metadata.name=used") }, true},
		{"reads the config map its pod uses", func() error { _, err := ka.ConfigMaps().Get(ctx, "default", "cm", metav1.GetOptions{}); return err }, true},

		{"creates its own Lease", func() error {
			_, err := ka.Leases().Create(ctx, lease("ka", "kube-node-lease"), metav1.CreateOptions{})
			return err
		}, true},
		{"creates another node's Lease", func() error {
			_, err := ka.Leases().Create(ctx, lease("kc", "kube-node-lease"), metav1.CreateOptions{})
			return err
		}, false},
		{"creates a Lease outside kube-node-lease", func() error {
			_, err := ka.Leases().Create(ctx, lease("ka", "kube-system"), metav1.CreateOptions{})
			return err
		}, false},
		{"deletes another node's Lease", func() error {
			return ka.Leases().Delete(ctx, "kube-node-lease", "kb", metav1.DeleteOptions{})
		}, false},
		{"deletes its own pod", func() error { return ka.Pods().Delete(ctx, "default", "on-ka", metav1.DeleteOptions{}) }, true},
	}
	for _, s := range steps {
		err := s.call()
		switch {
		case s.allowed && err != nil:
			t.Errorf("a kubelet %s: %v, want it allowed", s.name, err)
		case !s.allowed && !apierrors.IsForbidden(err):
			t.Errorf("a kubelet %s: err %v, want Forbidden", s.name, err)
		}
	}
	// The refusals say why, as Kubernetes does.
	_, err := ka.Secrets().Get(ctx, "default", "other", metav1.GetOptions{})
	if want := `User "system:node:ka" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'ka' and this object`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("refusal: %v, want it to say %q", err, want)
	}
}

// A kubelet may read a secret as soon as it sees the pod that uses it:
// the graph catches up with the pod watch before the read is refused.
func TestNodeReadsTheSecretOfANewlyBoundPod(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	admin := ts.client(t)
	ka := ts.clientAs(t, "system:node:ka", "system:nodes")
	// As a kubelet learns of its pods: through its watch. A read right
	// after the event must be allowed (the graph may lag the event by a
	// little, which the authorizer waits out), never a read before the
	// kubelet could know of the pod.
	w, err := ka.Pods().Watch(ctx, "default", metav1.ListOptions{FieldSelector: "spec.nodeName=ka"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range 20 {
		name := fmt.Sprintf("s%d", i)
		mustCreate(t, func() error {
			_, err := admin.Secrets().Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}, metav1.CreateOptions{})
			return err
		})
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p" + name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "ka",
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}}}}
		mustCreate(t, func() error { _, err := admin.Pods().Create(ctx, p, metav1.CreateOptions{}); return err })
		select {
		case ev := <-w.Events():
			if ev.Object == nil || ev.Object.Name != p.Name {
				t.Fatalf("the kubelet's watch: %+v, want pod %s", ev, p.Name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the kubelet's watch did not see pod %s", p.Name)
		}
		if _, err := ka.Secrets().Get(ctx, "default", name, metav1.GetOptions{}); err != nil {
			t.Fatalf("reading the secret of a pod just bound: %v", err)
		}
	}
	// Once the pod is gone, so is the right.
	if err := admin.Pods().Delete(ctx, "default", "ps0", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := ka.Secrets().Get(ctx, "default", "s0", metav1.GetOptions{})
		if apierrors.IsForbidden(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the secret of a deleted pod: err %v, want Forbidden", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustCreate(t *testing.T, create func() error) {
	t.Helper()
	if err := create(); err != nil {
		t.Fatal(err)
	}
}
