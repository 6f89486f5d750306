package containerd

import (
	"context"
	"encoding/json"
	"fmt"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/oci"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/identity"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// maxCachedSpecs bounds the cache of process specs: the images a node
// runs and the users its pods ask for are few, so reaching it means
// something churns, and the cache starts over.
const maxCachedSpecs = 1024

// imageFacts is what the runtime reads of an image: its manifest, config
// and layers. They are read once per manifest digest, since content by
// digest never changes; every container start used to read them again,
// a dozen calls into containerd's content store.
type imageFacts struct {
	id         string // config digest: the image ID
	user       string
	size       uint64
	entrypoint []string
	cmd        []string
	chainID    string // the snapshot the image's layers unpack to

	// unpacked is set once the image's snapshot is known to exist.
	unpacked bool
}

// imageFacts returns img's facts, from the cache when its manifest was
// read before.
func (r *Runtime) imageFacts(ctx context.Context, img containerd.Image) (*imageFacts, error) {
	key := img.Target().Digest
	r.mu.Lock()
	f := r.images[key]
	r.mu.Unlock()
	if f != nil {
		return f, nil
	}
	cfg, err := img.Config(ctx)
	if err != nil {
		return nil, err
	}
	spec, err := img.Spec(ctx)
	if err != nil {
		return nil, err
	}
	size, err := img.Size(ctx)
	if err != nil {
		return nil, err
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return nil, err
	}
	f = &imageFacts{
		id: cfg.Digest.String(), user: spec.Config.User, size: uint64(size),
		entrypoint: spec.Config.Entrypoint, cmd: spec.Config.Cmd,
		chainID: identity.ChainID(diffIDs).String(),
	}
	r.mu.Lock()
	if len(r.images) >= maxCachedSpecs {
		r.images = map[digest.Digest]*imageFacts{}
	}
	r.images[key] = f
	r.mu.Unlock()
	return f, nil
}

// forgetImage drops what is cached of an image's manifest.
func (r *Runtime) forgetImage(key digest.Digest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.images, key)
	for k := range r.processes {
		if k.image == key {
			delete(r.processes, k)
		}
	}
}

// ensureUnpacked makes sure the image's layers are unpacked into the
// snapshotter, checking containerd only the first time.
func (r *Runtime) ensureUnpacked(ctx context.Context, img containerd.Image, f *imageFacts) error {
	r.mu.Lock()
	done := f.unpacked
	r.mu.Unlock()
	if done {
		return nil
	}
	if ok, _ := img.IsUnpacked(ctx, r.cfg.Snapshotter); !ok {
		if err := img.Unpack(ctx, r.cfg.Snapshotter); err != nil {
			return fmt.Errorf("unpacking %s: %w", img.Name(), err)
		}
	}
	r.mu.Lock()
	f.unpacked = true
	r.mu.Unlock()
	return nil
}

// withRootfs gives the container a new writable snapshot on top of the
// image's (what containerd.WithNewSnapshot does, without reading the
// image's manifest and config again). When the image's snapshot has gone
// (removed behind the runtime's back) it is unpacked again, once.
func (r *Runtime) withRootfs(id string, img containerd.Image, f *imageFacts) containerd.NewContainerOpts {
	return func(ctx context.Context, client *containerd.Client, c *containers.Container) error {
		c.Snapshotter = r.cfg.Snapshotter
		sn := client.SnapshotService(c.Snapshotter)
		_, err := sn.Prepare(ctx, id, f.chainID)
		if errdefs.IsNotFound(err) {
			r.mu.Lock()
			f.unpacked = false
			r.mu.Unlock()
			if err := r.ensureUnpacked(ctx, img, f); err != nil {
				return err
			}
			_, err = sn.Prepare(ctx, id, f.chainID)
		}
		if err != nil {
			return err
		}
		c.SnapshotKey = id
		return nil
	}
}

// processKey names a process spec: the image's manifest and the user
// options applied to it.
type processKey struct {
	image digest.Digest
	user  string
}

// withImageProcess applies the image's config (env, working dir, user)
// and then userOpts to the spec's process, right after the default spec.
// Both read the image's /etc/passwd and /etc/group from a temporary
// mount of the container's rootfs; the outcome depends only on the image
// and the options (userKey), so it is computed once and kept.
func (r *Runtime) withImageProcess(img containerd.Image, userKey string, userOpts []oci.SpecOpts) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *oci.Spec) error {
		key := processKey{image: img.Target().Digest, user: userKey}
		r.mu.Lock()
		cached, ok := r.processes[key]
		r.mu.Unlock()
		if ok {
			var p specs.Process
			if err := json.Unmarshal(cached, &p); err != nil {
				return err
			}
			s.Process = &p
			return nil
		}
		for _, o := range append([]oci.SpecOpts{oci.WithImageConfig(img)}, userOpts...) {
			if err := o(ctx, client, c, s); err != nil {
				return err
			}
		}
		data, err := json.Marshal(s.Process)
		if err != nil {
			return err
		}
		r.mu.Lock()
		if len(r.processes) >= maxCachedSpecs {
			r.processes = map[processKey][]byte{}
		}
		r.processes[key] = data
		r.mu.Unlock()
		return nil
	}
}
