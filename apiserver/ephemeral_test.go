package apiserver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEphemeralContainers(t *testing.T) {
	ts := startTestServer(t)
	c := ts.client(t)
	if _, err := c.Pods().Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const path = "/api/v1/namespaces/default/pods/p/ephemeralcontainers"
	debug := func(name string) corev1.EphemeralContainer {
		return corev1.EphemeralContainer{TargetContainerName: "c", EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: name, Image: "busybox", Stdin: true, TTY: true, TerminationMessagePolicy: corev1.TerminationMessageReadFile}}
	}
	// put sends the pod with its ephemeral containers changed by edit.
	put := func(edit func(p *corev1.Pod)) (*corev1.Pod, error) {
		var p corev1.Pod
		if err := c.Do(t.Context(), "GET", path, nil, nil, &p); err != nil {
			t.Fatal(err)
		}
		edit(&p)
		var out corev1.Pod
		err := c.Do(t.Context(), "PUT", path, nil, &p, &out)
		return &out, err
	}
	out, err := put(func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debug("debugger"))
	})
	if err != nil {
		t.Fatalf("adding an ephemeral container: %v", err)
	}
	if len(out.Spec.EphemeralContainers) != 1 || out.Spec.EphemeralContainers[0].ImagePullPolicy == "" {
		t.Fatalf("ephemeral containers %+v, want the one added, defaulted", out.Spec.EphemeralContainers)
	}
	cases := []struct {
		name string
		edit func(p *corev1.Pod)
		want string // in the Invalid error
	}{
		{"a name already used by a container is a duplicate", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debug("c"))
		}, `spec.ephemeralContainers[1].name: Duplicate value: "c"`},
		{"ports are forbidden", func(p *corev1.Pod) {
			d := debug("d2")
			d.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, d)
		}, "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container"},
		{"probes are forbidden", func(p *corev1.Pod) {
			d := debug("d2")
			d.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, d)
		}, "spec.ephemeralContainers[1].readinessProbe: Forbidden"},
		{"a target that is no container of the pod is not found", func(p *corev1.Pod) {
			d := debug("d2")
			d.TargetContainerName = "nope"
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, d)
		}, `spec.ephemeralContainers[1].targetContainerName: Not found: "nope"`},
		{"an existing one may not be removed", func(p *corev1.Pod) { p.Spec.EphemeralContainers = nil },
			`existing ephemeral containers "debugger" may not be removed`},
		{"an existing one may not be changed", func(p *corev1.Pod) { p.Spec.EphemeralContainers[0].Image = "other" },
			`existing ephemeral containers "debugger" may not be changed`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := put(tc.edit)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want Invalid with %q", err, tc.want)
			}
		})
	}
	t.Run("the pod itself cannot gain ephemeral containers", func(t *testing.T) {
		p, err := c.Pods().Get(t.Context(), "default", "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debug("sneaky"))
		if _, err := c.Pods().Update(t.Context(), p, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("update of the pod adding an ephemeral container: %v, want Invalid", err)
		}
	})
	t.Run("the subresource changes nothing but ephemeral containers", func(t *testing.T) {
		out, err := put(func(p *corev1.Pod) {
			p.Labels = map[string]string{"sneaky": "yes"}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debug("second"))
		})
		if err != nil || len(out.Spec.EphemeralContainers) != 2 || out.Labels["sneaky"] != "" {
			t.Errorf("got %v, ephemeral containers %d, labels %v; want 2 and no new label", err, len(out.Spec.EphemeralContainers), out.Labels)
		}
	})
}
