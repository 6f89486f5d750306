package containerd

import (
	"context"
	"fmt"
	"io"
	goruntime "runtime"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/remotes"
	"github.com/containerd/containerd/remotes/docker"
)

// LabelLocal marks images imported from an archive: the kubelet uses them
// as they are and never pulls them.
const LabelLocal = "minik.io/local"

func goarch() string { return goruntime.GOARCH }

// resolver reaches registries over HTTPS, or plain HTTP for localhost and,
// when insecure, for every host.
func resolver(insecure bool) remotes.Resolver {
	match := docker.MatchLocalhost
	if insecure {
		match = docker.MatchAllHosts
	}
	return docker.NewResolver(docker.ResolverOptions{Hosts: docker.ConfigureDefaultRegistries(docker.WithPlainHTTP(match))})
}

// Import loads an OCI or docker image archive into namespace ns of the
// containerd at address and unpacks it. It returns the image names.
func Import(ctx context.Context, address, ns string, archive io.Reader) ([]string, error) {
	client, err := containerd.New(address, containerd.WithDefaultNamespace(ns))
	if err != nil {
		return nil, fmt.Errorf("connecting to containerd at %s: %w", address, err)
	}
	defer client.Close()
	ctx = namespaces.WithNamespace(ctx, ns)
	imgs, err := client.Import(ctx, archive, containerd.WithAllPlatforms(false))
	if err != nil {
		return nil, fmt.Errorf("importing: %w", err)
	}
	var names []string
	for _, i := range imgs {
		if i.Labels == nil {
			i.Labels = map[string]string{}
		}
		i.Labels[LabelLocal] = "true"
		if updated, err := client.ImageService().Update(ctx, i, "labels."+LabelLocal); err == nil {
			i = updated
		}
		img := containerd.NewImage(client, i)
		if err := img.Unpack(ctx, "overlayfs"); err != nil {
			return nil, fmt.Errorf("unpacking %s: %w", i.Name, err)
		}
		names = append(names, i.Name)
	}
	return names, nil
}

// Namespaces lists the containerd namespaces of minik nodes.
func Namespaces(ctx context.Context, address string) ([]string, error) {
	client, err := containerd.New(address)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	all, err := client.NamespaceService().List(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range all {
		if len(n) > len("minik-") && n[:len("minik-")] == "minik-" {
			out = append(out, n)
		}
	}
	return out, nil
}
