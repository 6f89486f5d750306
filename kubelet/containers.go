package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"minik/kubelet/fieldpath"
	"minik/kubelet/podstep"
	"minik/kubelet/runtime"
	"minik/kubelet/volumes"
	"minik/proto/cri"
)

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
			return nil, podstep.ConfigErrorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", pod.Name, c.Name)
		case !out.HasRunAsUser:
			user := ""
			if img != nil {
				user, _, _ = strings.Cut(img.User, ":")
			}
			uid, err := strconv.ParseInt(user, 10, 64)
			switch {
			case user == "" || user == "root" || err == nil && uid == 0:
				return nil, podstep.ConfigErrorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", pod.Name, c.Name)
			case err != nil:
				return nil, podstep.ConfigErrorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", user, pod.Name, c.Name)
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
			cm, err := k.configMaps.Get(ctx, pod.Namespace, from.ConfigMapRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && optional {
					continue
				}
				return nil, podstep.ConfigErrorf("configmap %q not found", from.ConfigMapRef.Name)
			}
			data = cm.Data
		case from.SecretRef != nil:
			optional = from.SecretRef.Optional != nil && *from.SecretRef.Optional
			s, err := k.secrets.Get(ctx, pod.Namespace, from.SecretRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && optional {
					continue
				}
				return nil, podstep.ConfigErrorf("secret %q not found", from.SecretRef.Name)
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

// nodeAllocatable is the node's allocatable, nil before it registered.
func (k *Kubelet) nodeAllocatable() corev1.ResourceList {
	if node := k.nodes.Node(); node != nil {
		return node.Status.Allocatable
	}
	return nil
}

func (k *Kubelet) envValueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource, podIP string) (string, bool, error) {
	switch {
	case from.FieldRef != nil:
		v, err := fieldpath.FieldValue(pod, from.FieldRef.FieldPath, podIP, k.cfg.NodeIP)
		return v, false, asConfigError(err)
	case from.ResourceFieldRef != nil:
		v, err := fieldpath.ResourceValue(pod, c, from.ResourceFieldRef, k.nodeAllocatable())
		return v, false, asConfigError(err)
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := k.configMaps.Get(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			return "", false, podstep.ConfigErrorf("configmap %q not found", ref.Name)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if optional {
				return "", true, nil
			}
			return "", false, podstep.ConfigErrorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return v, false, nil
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		s, err := k.secrets.Get(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			return "", false, podstep.ConfigErrorf("secret %q not found", ref.Name)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			if optional {
				return "", true, nil
			}
			return "", false, podstep.ConfigErrorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return string(v), false, nil
	}
	return "", false, podstep.ConfigErrorf("unsupported valueFrom")
}

// asConfigError makes err, if any, a CreateContainerConfigError.
func asConfigError(err error) error {
	if err == nil {
		return nil
	}
	return &podstep.ConfigError{Msg: err.Error()}
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

// prepareVolumes sets up the pod's volumes and writes its /etc/hosts.
// It returns when the projected tokens in them must be replaced (zero:
// none).
func (k *Kubelet) prepareVolumes(ctx context.Context, pod *corev1.Pod, podIP string) (time.Time, error) {
	refreshAt, err := k.volumes.SetUp(ctx, pod, podIP)
	if err != nil {
		return time.Time{}, err
	}
	return refreshAt, k.writeHosts(pod, podIP)
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
			return nil, podstep.ConfigErrorf("volumeMount %q: no such volume", m.Name)
		}
		host, err := k.volumes.HostPath(pod, &v)
		if err != nil {
			return nil, err
		}
		readonly := m.ReadOnly || v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = expand(m.SubPathExpr, env)
		}
		if sub != "" {
			p, err := volumes.ResolveSubPath(host, sub)
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
