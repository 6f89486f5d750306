package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/volumeutil"
	"minik/kubelet/podstep"
	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// configError is a container that cannot be created as specified
// (CreateContainerConfigError).
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func configErrorf(format string, args ...any) error {
	return &configError{fmt.Sprintf(format, args...)}
}

// podDir is where a pod's volumes, /etc/hosts and logs live.
func (k *Kubelet) podDir(uid string) string { return filepath.Join(k.cfg.RootDir, "pods", uid) }

// logDir holds a pod's container logs: CONTAINER/RESTARTCOUNT.log.
func (k *Kubelet) logDir(pod *corev1.Pod) string {
	return filepath.Join(k.cfg.RootDir, "logs", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

func (k *Kubelet) sandboxConfig(pod *corev1.Pod) *cri.PodSandboxConfig {
	hostname, err := sandboxHostname(pod, k.cfg.ClusterDomain)
	if err != nil {
		hostname = podHostname(pod) // writeSandboxFiles refused to create the sandbox
	}
	cfg := &cri.PodSandboxConfig{
		Metadata:     &cri.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)},
		Hostname:     hostname,
		LogDirectory: k.logDir(pod),
		Labels: map[string]string{runtime.LabelPodName: pod.Name, runtime.LabelPodNamespace: pod.Namespace,
			runtime.LabelPodUID: string(pod.UID)},
		HostNetwork: pod.Spec.HostNetwork,
		HostPid:     pod.Spec.HostPID,
		HostIpc:     pod.Spec.HostIPC,
		Sysctls:     map[string]string{},
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				cfg.PortMappings = append(cfg.PortMappings, &cri.PortMapping{Protocol: string(p.Protocol),
					ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP})
			}
		}
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			cfg.Sysctls[s.Name] = s.Value
		}
	}
	return cfg
}

func podHostname(pod *corev1.Pod) string {
	h := pod.Name
	if pod.Spec.Hostname != "" {
		h = pod.Spec.Hostname
	}
	if len(h) > 63 {
		h = h[:63]
	}
	return strings.TrimRight(h, "-.")
}

// containerConfig builds the runtime's config for container c: command,
// env, mounts, resources and security context.
func (k *Kubelet) containerConfig(ctx context.Context, pod *corev1.Pod, c *corev1.Container, init bool, restarts int, podIP string, img *cri.Image) (*cri.ContainerConfig, error) {
	env, err := k.containerEnv(ctx, pod, c, podIP)
	if err != nil {
		return nil, err
	}
	cfg := &cri.ContainerConfig{
		Metadata:   &cri.ContainerMetadata{Name: c.Name, Attempt: uint32(restarts)},
		Image:      c.Image,
		Command:    expandAll(c.Command, env),
		Args:       expandAll(c.Args, env),
		WorkingDir: c.WorkingDir,
		Labels: map[string]string{runtime.LabelPodName: pod.Name, runtime.LabelPodNamespace: pod.Namespace,
			runtime.LabelPodUID: string(pod.UID), runtime.LabelContainerName: c.Name},
		Annotations: map[string]string{runtime.AnnotationRestartCount: strconv.Itoa(restarts),
			runtime.AnnotationContainerHash: podstep.ContainerHash(c)},
		LogPath:   filepath.Join(c.Name, strconv.Itoa(restarts)+".log"),
		Stdin:     c.Stdin,
		StdinOnce: c.StdinOnce,
		Tty:       c.TTY,
	}
	if init {
		cfg.Annotations[runtime.AnnotationInit] = "true"
	}
	for _, kv := range env {
		cfg.Envs = append(cfg.Envs, &cri.KeyValue{Key: kv.Name, Value: kv.Value})
	}
	mounts, err := k.containerMounts(pod, c, env)
	if err != nil {
		return nil, err
	}
	cfg.Mounts = mounts
	cfg.Resources = linuxResources(c)
	sc, err := securityContext(pod, c, img)
	if err != nil {
		return nil, err
	}
	cfg.SecurityContext = sc
	return cfg, nil
}

// linuxResources maps requests and limits to cgroup settings, as the
// Kubernetes kubelet does: shares from the cpu request (or limit), a CFS
// quota from the cpu limit, and the memory limit.
func linuxResources(c *corev1.Container) *cri.LinuxContainerResources {
	r := &cri.LinuxContainerResources{}
	cpuReq := c.Resources.Requests.Cpu().MilliValue()
	cpuLim := c.Resources.Limits.Cpu().MilliValue()
	if cpuReq == 0 {
		cpuReq = cpuLim
	}
	r.CpuShares = max(2, cpuReq*1024/1000)
	if cpuLim > 0 {
		r.CpuPeriod = 100000
		r.CpuQuota = max(1000, cpuLim*100000/1000)
	}
	r.MemoryLimitInBytes = c.Resources.Limits.Memory().Value()
	return r
}

// securityContext merges the pod's and the container's security context
// and refuses runAsNonRoot containers that would run as root.
func securityContext(pod *corev1.Pod, c *corev1.Container, img *cri.Image) (*cri.LinuxContainerSecurityContext, error) {
	out := &cri.LinuxContainerSecurityContext{}
	var nonRoot *bool
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			out.HasRunAsUser, out.RunAsUser = true, *psc.RunAsUser
		}
		if psc.RunAsGroup != nil {
			out.HasRunAsGroup, out.RunAsGroup = true, *psc.RunAsGroup
		}
		nonRoot = psc.RunAsNonRoot
		out.SupplementalGroups = append(out.SupplementalGroups, psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			out.SupplementalGroups = append(out.SupplementalGroups, *psc.FSGroup)
		}
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			out.HasRunAsUser, out.RunAsUser = true, *sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			out.HasRunAsGroup, out.RunAsGroup = true, *sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
		out.ReadonlyRootfs = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
		out.Privileged = sc.Privileged != nil && *sc.Privileged
		out.NoNewPrivs = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	}
	if nonRoot != nil && *nonRoot {
		switch {
		case out.HasRunAsUser && out.RunAsUser == 0:
			return nil, configErrorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", pod.Name, c.Name)
		case !out.HasRunAsUser:
			user := ""
			if img != nil {
				user, _, _ = strings.Cut(img.User, ":")
			}
			uid, err := strconv.ParseInt(user, 10, 64)
			switch {
			case user == "" || user == "root" || err == nil && uid == 0:
				return nil, configErrorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", pod.Name, c.Name)
			case err != nil:
				return nil, configErrorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", user, pod.Name, c.Name)
			}
		}
	}
	return out, nil
}

// --- environment ---

// containerEnv is the container's environment, as the kubelet makes it:
// envFrom, then env (a later name replaces an earlier one; $(VAR) in a
// value expands from the variables before it and the service
// variables), then the service variables (serviceEnv) the container does
// not set itself.
func (k *Kubelet) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container, podIP string) ([]corev1.EnvVar, error) {
	svcEnv, err := k.serviceEnv(ctx, pod)
	if err != nil {
		return nil, err
	}
	var out []corev1.EnvVar
	index := map[string]int{}
	set := func(name, value string) {
		if i, ok := index[name]; ok {
			out[i].Value = value
			return
		}
		index[name] = len(out)
		out = append(out, corev1.EnvVar{Name: name, Value: value})
	}
	for _, from := range c.EnvFrom {
		optional := false
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			optional = from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional
			cm, err := k.cfg.Client.ConfigMaps().Get(ctx, pod.Namespace, from.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) && optional {
					continue
				}
				return nil, configErrorf("configmap %q not found", from.ConfigMapRef.Name)
			}
			data = cm.Data
		case from.SecretRef != nil:
			optional = from.SecretRef.Optional != nil && *from.SecretRef.Optional
			s, err := k.cfg.Client.Secrets().Get(ctx, pod.Namespace, from.SecretRef.Name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) && optional {
					continue
				}
				return nil, configErrorf("secret %q not found", from.SecretRef.Name)
			}
			data = map[string]string{}
			for key, v := range s.Data {
				data[key] = string(v)
			}
		}
		keys := make([]string, 0, len(data))
		for key := range data {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			set(from.Prefix+key, data[key])
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, append(svcEnv[:len(svcEnv):len(svcEnv)], out...)))
			continue
		}
		v, skip, err := k.envValueFrom(ctx, pod, c, e.ValueFrom, podIP)
		if err != nil {
			return nil, err
		}
		if !skip {
			set(e.Name, v)
		}
	}
	for _, e := range svcEnv {
		if _, ok := index[e.Name]; !ok {
			out = append(out, e)
		}
	}
	return out, nil
}

func (k *Kubelet) envValueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource, podIP string) (string, bool, error) {
	switch {
	case from.FieldRef != nil:
		v, err := fieldValue(pod, from.FieldRef.FieldPath, podIP, k.cfg.NodeIP)
		return v, false, err
	case from.ResourceFieldRef != nil:
		v, err := resourceValue(pod, c, from.ResourceFieldRef)
		return v, false, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := k.cfg.Client.ConfigMaps().Get(ctx, pod.Namespace, ref.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			return "", false, configErrorf("configmap %q not found", ref.Name)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if optional {
				return "", true, nil
			}
			return "", false, configErrorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return v, false, nil
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		s, err := k.cfg.Client.Secrets().Get(ctx, pod.Namespace, ref.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			return "", false, configErrorf("secret %q not found", ref.Name)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			if optional {
				return "", true, nil
			}
			return "", false, configErrorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return string(v), false, nil
	}
	return "", false, configErrorf("unsupported valueFrom")
}

// fieldValue resolves a downward API fieldRef.
func fieldValue(pod *corev1.Pod, path, podIP, hostIP string) (string, error) {
	if strings.HasPrefix(path, "metadata.labels['") || strings.HasPrefix(path, "metadata.annotations['") {
		open := strings.Index(path, "['")
		key := strings.TrimSuffix(path[open+2:], "']")
		if strings.HasPrefix(path, "metadata.labels") {
			return pod.Labels[key], nil
		}
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	}
	return "", configErrorf("unsupported fieldRef %q", path)
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return b.String()
}

// resourceValue resolves a resourceFieldRef: the request or limit divided
// by the divisor, rounded up, as Kubernetes does. An unset limit is the
// node's allocatable in Kubernetes; here it is reported as 0... unless set.
func resourceValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	target := c
	if ref.ContainerName != "" {
		target = nil
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == ref.ContainerName {
				target = &pod.Spec.Containers[i]
			}
		}
		if target == nil {
			return "", configErrorf("resourceFieldRef: no container %q", ref.ContainerName)
		}
	}
	var q resource.Quantity
	switch ref.Resource {
	case "limits.cpu":
		q = *target.Resources.Limits.Cpu()
	case "limits.memory":
		q = *target.Resources.Limits.Memory()
	case "requests.cpu":
		q = *target.Resources.Requests.Cpu()
	case "requests.memory":
		q = *target.Resources.Requests.Memory()
	case "limits.ephemeral-storage":
		q = *target.Resources.Limits.StorageEphemeral()
	case "requests.ephemeral-storage":
		q = *target.Resources.Requests.StorageEphemeral()
	default:
		return "", configErrorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if strings.HasSuffix(ref.Resource, "cpu") {
		// Cores, rounded up, in units of the divisor (1, 1m, ...).
		v := (q.MilliValue() + divisor.MilliValue() - 1) / divisor.MilliValue()
		if q.MilliValue() > 0 && v == 0 {
			v = 1
		}
		return strconv.FormatInt(v, 10), nil
	}
	v := (q.Value() + divisor.Value() - 1) / divisor.Value()
	return strconv.FormatInt(v, 10), nil
}

// expand replaces $(VAR) with earlier variables' values; $$ escapes.
func expand(s string, env []corev1.EnvVar) string {
	if !strings.Contains(s, "$") {
		return s
	}
	vals := map[string]string{}
	for _, e := range env {
		vals[e.Name] = e.Value
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vals[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func expandAll(in []string, env []corev1.EnvVar) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, env)
	}
	return out
}

// --- volumes ---

// prepareVolumes creates or refreshes the pod's volumes on disk and its
// /etc/hosts file. It returns when the projected tokens in them must be
// replaced (zero: none).
func (k *Kubelet) prepareVolumes(ctx context.Context, pod *corev1.Pod, podIP string) (time.Time, error) {
	var refreshAt time.Time
	for i := range pod.Spec.Volumes {
		at, err := k.setUpVolume(ctx, pod, &pod.Spec.Volumes[i], podIP)
		if err != nil {
			return time.Time{}, err
		}
		refreshAt = earliest(refreshAt, at)
	}
	return refreshAt, k.writeHosts(pod, podIP)
}

// refreshTokenVolumes rewrites the projected volumes that hold a
// service-account token, with a fresh token when the old one is due; it
// returns when to come back.
func (k *Kubelet) refreshTokenVolumes(ctx context.Context, pod *corev1.Pod, podIP string) (time.Time, error) {
	var refreshAt time.Time
	for i := range pod.Spec.Volumes {
		if !podstep.HasTokenProjection(&pod.Spec.Volumes[i]) {
			continue
		}
		at, err := k.setUpVolume(ctx, pod, &pod.Spec.Volumes[i], podIP)
		if err != nil {
			return time.Time{}, err
		}
		refreshAt = earliest(refreshAt, at)
	}
	return refreshAt, nil
}

// earliest is the earlier of two times, zero meaning never.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// setUpVolume writes one volume under the pod's directory; for a
// projected volume with a token it returns when the token is due.
func (k *Kubelet) setUpVolume(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume, podIP string) (time.Time, error) {
	v := *vol
	target := filepath.Join(k.podDir(string(pod.UID)), "volumes", v.Name)
	switch {
	case v.Projected != nil:
		files, refreshAt, err := projectVolume(ctx, kubeletSources{k}, pod, v.Projected, podIP, k.cfg.NodeIP, k.cfg.Clock.Now())
		if err != nil {
			return time.Time{}, err
		}
		// On a tmpfs, as the kubelet keeps projected volumes: they hold
		// tokens and secrets.
		if err := k.setUpSecretDir(pod, target); err != nil {
			return time.Time{}, err
		}
		return refreshAt, files.write(target, v.Projected.DefaultMode)
	case v.EmptyDir != nil:
		if err := k.setUpEmptyDir(pod, &v, target); err != nil {
			return time.Time{}, err
		}
	case v.PersistentVolumeClaim != nil || v.Ephemeral != nil:
		path, err := k.claimVolumePath(ctx, pod, volumeutil.ClaimVolumeName(pod, &v))
		if err != nil {
			var me *mountError
			if errors.As(err, &me) {
				me.msg = fmt.Sprintf("MountVolume.SetUp failed for volume %q : %s", v.Name, me.msg)
			}
			return time.Time{}, err
		}
		if err := linkVolume(target, path); err != nil {
			return time.Time{}, err
		}
	case v.HostPath != nil:
		t := corev1.HostPathUnset
		if v.HostPath.Type != nil {
			t = *v.HostPath.Type
		}
		switch t {
		case corev1.HostPathDirectoryOrCreate:
			if err := os.MkdirAll(v.HostPath.Path, 0o755); err != nil {
				return time.Time{}, err
			}
		case corev1.HostPathFileOrCreate:
			if _, err := os.Stat(v.HostPath.Path); errors.Is(err, os.ErrNotExist) {
				if err := os.WriteFile(v.HostPath.Path, nil, 0o644); err != nil {
					return time.Time{}, err
				}
			}
		case corev1.HostPathDirectory, corev1.HostPathFile, corev1.HostPathSocket:
			if _, err := os.Stat(v.HostPath.Path); err != nil {
				return time.Time{}, configErrorf("hostPath %s: %v", v.HostPath.Path, err)
			}
		}
	case v.ConfigMap != nil:
		cm, err := k.cfg.Client.ConfigMaps().Get(ctx, pod.Namespace, v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && v.ConfigMap.Optional != nil && *v.ConfigMap.Optional {
				cm = &corev1.ConfigMap{}
			} else {
				return time.Time{}, configErrorf("configmap %q not found", v.ConfigMap.Name)
			}
		}
		err = writeVolumeFiles(target, configMapBytes(cm), v.ConfigMap.Items, v.ConfigMap.DefaultMode)
		if err := keyError(err, v.ConfigMap.Optional, "configmap references non-existent config key: %s"); err != nil {
			return time.Time{}, err
		}
	case v.Secret != nil:
		s, err := k.cfg.Client.Secrets().Get(ctx, pod.Namespace, v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && v.Secret.Optional != nil && *v.Secret.Optional {
				s = &corev1.Secret{}
			} else {
				return time.Time{}, configErrorf("secret %q not found", v.Secret.SecretName)
			}
		}
		if err := k.setUpSecretDir(pod, target); err != nil {
			return time.Time{}, err
		}
		err = writeVolumeFiles(target, s.Data, v.Secret.Items, v.Secret.DefaultMode)
		if err := keyError(err, v.Secret.Optional, "references non-existent secret key: %s"); err != nil {
			return time.Time{}, err
		}
	case v.DownwardAPI != nil:
		data, items, err := downwardAPIFiles(pod, v.DownwardAPI.Items, podIP, k.cfg.NodeIP)
		if err != nil {
			return time.Time{}, err
		}
		if err := writeVolumeFiles(target, data, items, v.DownwardAPI.DefaultMode); err != nil {
			return time.Time{}, err
		}
	default:
		return time.Time{}, configErrorf("volume %q: unsupported volume type", v.Name)
	}
	return time.Time{}, nil
}

// configMapBytes is a ConfigMap's data and binary data as files' contents.
func configMapBytes(cm *corev1.ConfigMap) map[string][]byte {
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for key, val := range cm.Data {
		data[key] = []byte(val)
	}
	for key, val := range cm.BinaryData {
		data[key] = val
	}
	return data
}

// downwardAPIFiles resolves downward API items into files' contents and
// the items that write them.
func downwardAPIFiles(pod *corev1.Pod, files []corev1.DownwardAPIVolumeFile, podIP, nodeIP string) (map[string][]byte, []corev1.KeyToPath, error) {
	data := map[string][]byte{}
	var items []corev1.KeyToPath
	for _, it := range files {
		var val string
		var err error
		switch {
		case it.FieldRef != nil:
			val, err = fieldValue(pod, it.FieldRef.FieldPath, podIP, nodeIP)
		case it.ResourceFieldRef != nil:
			val, err = resourceValue(pod, &pod.Spec.Containers[0], it.ResourceFieldRef)
		}
		if err != nil {
			return nil, nil, err
		}
		data[it.Path] = []byte(val)
		items = append(items, corev1.KeyToPath{Key: it.Path, Path: it.Path, Mode: it.Mode})
	}
	return data, items, nil
}

// missingKeyError is an item's key that the data lacks.
type missingKeyError string

func (e missingKeyError) Error() string { return string(e) }

// keyError is writeVolumeFiles' error as the kubelet has it: a key the
// volume's items name but its source lacks fails the volume (format
// says so, with the key), unless the volume is optional.
func keyError(err error, optional *bool, format string) error {
	var missing missingKeyError
	switch {
	case !errors.As(err, &missing):
		return err
	case optional != nil && *optional:
		return nil
	}
	return configErrorf(format, string(missing))
}

// writeVolumeFiles writes data (all keys, or only items) into dir. An
// item whose key the data lacks is skipped, and reported at the end as a
// missingKeyError (an error unless the volume is optional, as in the
// kubelet).
func writeVolumeFiles(dir string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	if len(items) == 0 {
		for key := range data {
			items = append(items, corev1.KeyToPath{Key: key, Path: key})
		}
	}
	var missing error
	for _, it := range items {
		val, ok := data[it.Key]
		if !ok {
			if missing == nil {
				missing = missingKeyError(it.Key)
			}
			continue
		}
		m := mode
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		p := filepath.Join(dir, filepath.Clean("/"+it.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, val, m); err != nil {
			return err
		}
		_ = os.Chmod(tmp, m)
		if err := os.Rename(tmp, p); err != nil {
			return err
		}
	}
	return missing
}

// writeHosts writes the pod's managed /etc/hosts (hostsFileContent); a
// hostNetwork pod's starts from the node's /etc/hosts.
func (k *Kubelet) writeHosts(pod *corev1.Pod, podIP string) error {
	var nodeHosts []byte
	if pod.Spec.HostNetwork {
		var err error
		if nodeHosts, err = os.ReadFile(etcHostsPath); err != nil {
			return err
		}
	}
	var ips []string
	if podIP != "" {
		ips = []string{podIP}
	}
	hostname, domain := podHostnameAndDomain(pod, k.cfg.ClusterDomain)
	dir := k.podDir(string(pod.UID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Written in place, as the kubelet does: running containers bind-mount
	// this inode, and a rename would leave them the old file.
	return os.WriteFile(filepath.Join(dir, "etc-hosts"), hostsFileContent(pod, ips, hostname, domain, nodeHosts), 0o644)
}

// etcHostsPath is the node's hosts file, which hostNetwork pods see.
const etcHostsPath = "/etc/hosts"

// containerMounts turns volumeMounts into bind mounts, plus /etc/hosts.
// env expands subPathExpr.
func (k *Kubelet) containerMounts(pod *corev1.Pod, c *corev1.Container, env []corev1.EnvVar) ([]*cri.Mount, error) {
	dir := k.podDir(string(pod.UID))
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	var out []*cri.Mount
	hasHosts, hasResolv := false, false
	for _, m := range c.VolumeMounts {
		v, ok := vols[m.Name]
		if !ok {
			return nil, configErrorf("volumeMount %q: no such volume", m.Name)
		}
		host := filepath.Join(dir, "volumes", v.Name)
		if v.HostPath != nil {
			host = v.HostPath.Path
		}
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			// The link setUpVolume made; the runtime gets the real path.
			real, err := filepath.EvalSymlinks(host)
			if err != nil {
				return nil, &mountError{fmt.Sprintf("volume %q is not mounted: %v", v.Name, err)}
			}
			host = real
		}
		readonly := m.ReadOnly || v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = expand(m.SubPathExpr, env)
		}
		if sub != "" {
			p, err := resolveSubPath(host, sub)
			if err != nil {
				return nil, err
			}
			host = p
		}
		hasHosts = hasHosts || m.MountPath == "/etc/hosts"
		hasResolv = hasResolv || m.MountPath == "/etc/resolv.conf"
		out = append(out, &cri.Mount{ContainerPath: m.MountPath, HostPath: host, Readonly: readonly})
	}
	// As in the kubelet, a container that mounts its own /etc/hosts keeps
	// it; every other one gets the managed file, hostNetwork pods too.
	if !hasHosts {
		out = append(out, &cri.Mount{ContainerPath: "/etc/hosts", HostPath: filepath.Join(dir, "etc-hosts")})
	}
	// The sandbox's resolv.conf (writeSandboxFiles). A sandbox made before
	// the kubelet wrote one has none: the runtime then gives the host's.
	if resolv := filepath.Join(dir, "resolv.conf"); !hasResolv {
		if _, err := os.Stat(resolv); err == nil {
			out = append(out, &cri.Mount{ContainerPath: "/etc/resolv.conf", HostPath: resolv})
		}
	}
	return out, nil
}
