package apiserver

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// saPod builds pods for the ServiceAccount plugin's tests.
type saPod struct{ p *corev1.Pod }

func makeSAPod() saPod {
	return saPod{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}
}

func (b saPod) Init(name string) saPod {
	b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, corev1.Container{Name: name, Image: "busybox"})
	return b
}

func (b saPod) Automount(on bool) saPod { b.p.Spec.AutomountServiceAccountToken = &on; return b }

func (b saPod) MountAt(path string) saPod {
	b.p.Spec.Volumes = append(b.p.Spec.Volumes, corev1.Volume{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	b.p.Spec.Containers[0].VolumeMounts = append(b.p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "mine", MountPath: path})
	return b
}

func (b saPod) PullSecret(name string) saPod {
	b.p.Spec.ImagePullSecrets = append(b.p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: name})
	return b
}

func (b saPod) Obj() *corev1.Pod { return b.p }

var saMount = corev1.VolumeMount{Name: "kube-api-access-abcde", ReadOnly: true, MountPath: ServiceAccountMountPath}

func TestApplyServiceAccount(t *testing.T) {
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"}}
	noAutomount := account.DeepCopy()
	noAutomount.AutomountServiceAccountToken = ptr.To(false)
	withPull := account.DeepCopy()
	withPull.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	tests := []struct {
		name        string
		pod         *corev1.Pod
		sa          *corev1.ServiceAccount
		mounts      [][]corev1.VolumeMount // per init container, then per container
		wantVolume  bool
		pullSecrets []string
	}{
		{name: "a pod gets the volume, mounted read-only in its container",
			pod: makeSAPod().Obj(), sa: account, mounts: [][]corev1.VolumeMount{{saMount}}, wantVolume: true},
		{name: "init containers mount it too",
			pod: makeSAPod().Init("i").Obj(), sa: account, mounts: [][]corev1.VolumeMount{{saMount}, {saMount}}, wantVolume: true},
		{name: "automountServiceAccountToken false on the pod leaves it out",
			pod: makeSAPod().Automount(false).Obj(), sa: account, mounts: [][]corev1.VolumeMount{nil}},
		{name: "automountServiceAccountToken false on the account leaves it out",
			pod: makeSAPod().Obj(), sa: noAutomount, mounts: [][]corev1.VolumeMount{nil}},
		{name: "the pod's true wins over the account's false",
			pod: makeSAPod().Automount(true).Obj(), sa: noAutomount, mounts: [][]corev1.VolumeMount{{saMount}}, wantVolume: true},
		{name: "a container that mounts something at the path keeps it, and no volume is added when none needs it",
			pod: makeSAPod().MountAt(ServiceAccountMountPath).Obj(), sa: account,
			mounts: [][]corev1.VolumeMount{{{Name: "mine", MountPath: ServiceAccountMountPath}}}},
		{name: "a mount elsewhere does not count",
			pod: makeSAPod().MountAt("/data").Obj(), sa: account,
			mounts: [][]corev1.VolumeMount{{{Name: "mine", MountPath: "/data"}, saMount}}, wantVolume: true},
		{name: "the account's image pull secrets are copied when the pod has none",
			pod: makeSAPod().Obj(), sa: withPull, mounts: [][]corev1.VolumeMount{{saMount}}, wantVolume: true, pullSecrets: []string{"registry"}},
		{name: "the pod's own image pull secrets are kept",
			pod: makeSAPod().PullSecret("own").Obj(), sa: withPull, mounts: [][]corev1.VolumeMount{{saMount}}, wantVolume: true, pullSecrets: []string{"own"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod.DeepCopy()
			applyServiceAccount(pod, tt.sa, func() string { return "kube-api-access-abcde" })
			var got [][]corev1.VolumeMount
			for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				got = append(got, c.VolumeMounts)
			}
			if !equality.Semantic.DeepEqual(got, tt.mounts) {
				t.Errorf("mounts = %+v, want %+v", got, tt.mounts)
			}
			var vol *corev1.Volume
			for i := range pod.Spec.Volumes {
				if strings.HasPrefix(pod.Spec.Volumes[i].Name, "kube-api-access-") {
					vol = &pod.Spec.Volumes[i]
				}
			}
			if (vol != nil) != tt.wantVolume {
				t.Fatalf("kube-api-access volume: %v, want %v", vol != nil, tt.wantVolume)
			}
			if vol != nil && !equality.Semantic.DeepEqual(vol.Projected, wantAPIAccess()) {
				t.Errorf("volume = %+v", vol.Projected)
			}
			var pulls []string
			for _, r := range pod.Spec.ImagePullSecrets {
				pulls = append(pulls, r.Name)
			}
			if strings.Join(pulls, ",") != strings.Join(tt.pullSecrets, ",") {
				t.Errorf("imagePullSecrets = %v, want %v", pulls, tt.pullSecrets)
			}
		})
	}
}

// wantAPIAccess is the volume upstream's plugin adds, written out.
func wantAPIAccess() *corev1.ProjectedVolumeSource {
	mode, secs := int32(420), int64(3607)
	return &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &secs}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
			Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
	}}
}

// An existing kube-api-access volume is reused, not added twice.
func TestApplyServiceAccountReusesVolume(t *testing.T) {
	pod := makeSAPod().Init("i").Obj()
	pod.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-mine", VolumeSource: corev1.VolumeSource{Projected: wantAPIAccess()}}}
	applyServiceAccount(pod, &corev1.ServiceAccount{}, func() string { t.Fatal("named a new volume"); return "" })
	if len(pod.Spec.Volumes) != 1 || pod.Spec.Containers[0].VolumeMounts[0].Name != "kube-api-access-mine" ||
		pod.Spec.InitContainers[0].VolumeMounts[0].Name != "kube-api-access-mine" {
		t.Errorf("spec = %+v", pod.Spec)
	}
}

func TestMirrorPodIdentity(t *testing.T) {
	tests := []struct {
		name string
		edit func(*corev1.Pod)
		want string
	}{
		{name: "a plain mirror pod is admitted untouched", edit: func(*corev1.Pod) {}},
		{name: "a service account is refused", edit: func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" },
			want: "a mirror pod may not reference service accounts"},
		{name: "a secret volume is refused", edit: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
		}, want: "a mirror pod may not reference secrets"},
		{name: "a secret in env is refused", edit: func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}
		}, want: "a mirror pod may not reference secrets"},
		{name: "a token projection is refused", edit: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
		}, want: "a mirror pod may not use ServiceAccountToken volume projections"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := makeSAPod().Obj()
			pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
			tt.edit(pod)
			err := mirrorPodIdentity(pod)
			if got := errString(err); got != tt.want {
				t.Errorf("err = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMountableSecrets(t *testing.T) {
	enforcing := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa",
		Annotations: map[string]string{"kubernetes.io/enforce-mountable-secrets": "true"}},
		Secrets: []corev1.ObjectReference{{Name: "ok"}}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}}
	lax := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}
	secretVolume := func(name string) *corev1.Pod {
		p := makeSAPod().Obj()
		p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}}
		return p
	}
	envSecret := makeSAPod().Init("i").Obj()
	envSecret.Spec.InitContainers[0].Env = []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "other"}, Key: "k"}}}}
	tests := []struct {
		name string
		pod  *corev1.Pod
		sa   *corev1.ServiceAccount
		want string
	}{
		{name: "an account without the annotation allows any secret", pod: secretVolume("other"), sa: lax},
		{name: "a listed secret is allowed", pod: secretVolume("ok"), sa: enforcing},
		{name: "an unlisted secret volume is refused", pod: secretVolume("other"), sa: enforcing,
			want: `volume with secret.secretName="other" is not allowed because service account sa does not reference that secret`},
		{name: "an unlisted secret in an init container's env is refused", pod: envSecret, sa: enforcing,
			want: `init container i with envVar E referencing secret.secretName="other" is not allowed because service account sa does not reference that secret`},
		{name: "an unlisted image pull secret is refused", pod: makeSAPod().PullSecret("x").Obj(), sa: enforcing,
			want: `imagePullSecrets[0].name="x" is not allowed because service account sa does not reference that imagePullSecret`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errString(mountableSecrets(tt.pod, tt.sa)); got != tt.want {
				t.Errorf("err = %q, want %q", got, tt.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Through the API: pods get `default` and its volume, a missing account
// is refused with upstream's message, mirror pods are left as they are,
// and the plugin can be disabled.
func TestServiceAccountAdmission(t *testing.T) {
	ts := startTestServerWith(t, func(c *Config) { c.DisableAdmissionPlugins = nil })
	ctx := t.Context()
	admin := ts.client(t)
	create := func(p *corev1.Pod) (*corev1.Pod, error) { return admin.Pods().Create(ctx, p, metav1.CreateOptions{}) }

	p := makeSAPod().Obj()
	p.Namespace = "default"
	got, err := create(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.ServiceAccountName != "default" || len(got.Spec.Volumes) != 1 ||
		!strings.HasPrefix(got.Spec.Volumes[0].Name, "kube-api-access-") || len(got.Spec.Volumes[0].Name) != len("kube-api-access-")+5 ||
		!equality.Semantic.DeepEqual(got.Spec.Volumes[0].Projected, wantAPIAccess()) ||
		len(got.Spec.Containers[0].VolumeMounts) != 1 || got.Spec.Containers[0].VolumeMounts[0].MountPath != ServiceAccountMountPath {
		t.Errorf("admitted pod spec = %+v", got.Spec)
	}

	p = makeSAPod().Obj()
	p.Name, p.Namespace, p.Spec.ServiceAccountName = "nosa", "default", "missing"
	_, err = create(p)
	if want := `pods "nosa" is forbidden: error looking up service account default/missing: serviceaccount "missing" not found`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("missing account: %v, want 403 %q", err, want)
	}

	// A namespace without its default account: refused after upstream's
	// retries (about 1.5s), not at once.
	if _, err := admin.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p = makeSAPod().Obj()
	p.Namespace = "bare"
	start := time.Now()
	_, err = create(p)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `serviceaccount "default" not found`) {
		t.Errorf("no default account: %v", err)
	}
	// Nine waits of 100-200ms each, as upstream: at least 900ms.
	if d := time.Since(start); d < 850*time.Millisecond {
		t.Errorf("refused after %v, want the 0.9-1.8s upstream waits for the controller", d)
	}
	// Created while admission waits: the pod gets in.
	p.Name = "late"
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = admin.ServiceAccounts().Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "bare"}}, metav1.CreateOptions{})
	}()
	if got, err := create(p); err != nil || got.Spec.ServiceAccountName != "default" {
		t.Errorf("default created while admission waits: %v", err)
	}

	mirror := makeSAPod().Obj()
	mirror.Name, mirror.Namespace, mirror.Spec.NodeName = "static-n1", "default", "n1"
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	got, err = create(mirror)
	if err != nil || got.Spec.ServiceAccountName != "" || len(got.Spec.Volumes) != 0 {
		t.Errorf("mirror pod: %v %+v", err, got)
	}
	mirror.Name, mirror.Spec.ServiceAccountName = "static2-n1", "default"
	if _, err := create(mirror); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "a mirror pod may not reference service accounts") {
		t.Errorf("mirror pod with an account: %v", err)
	}
}

// Without the plugin (as API-only test clusters run), pods keep an empty
// serviceAccountName and get no volume.
func TestServiceAccountAdmissionDisabled(t *testing.T) {
	ts := startTestServer(t)
	p := makeSAPod().Obj()
	p.Namespace = "default"
	got, err := ts.client(t).Pods().Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil || got.Spec.ServiceAccountName != "" || len(got.Spec.Volumes) != 0 {
		t.Errorf("pod: %v %+v", err, got)
	}
	if _, err := New(Config{Etcd: ts.srv.cfg.Etcd, DisableAdmissionPlugins: []string{"NodeRestriction"}}); err == nil ||
		!strings.Contains(err.Error(), `admission plugin "NodeRestriction" cannot be disabled`) {
		t.Errorf("disabling NodeRestriction: %v", err)
	}
}
