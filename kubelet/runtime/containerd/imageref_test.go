package containerd_test

import (
	"context"
	"testing"
	"time"

	"minik/deploy/images"
	ctdrt "minik/kubelet/runtime/containerd"
)

// A container's imageRef is the image it was made from, even after its
// tag has moved to another image (a newer `minik image load`); a
// container made after the move reports the new image.
func TestImageRefIsTheImageTheContainerWasMadeFrom(t *testing.T) {
	rt, cfg := newRuntimeAndConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb := hostSandbox(ctx, t, rt, "p")
	imageID := func() string {
		t.Helper()
		img, err := rt.ImageStatus(ctx, "busybox")
		if err != nil || img == nil {
			t.Fatalf("busybox: %v, %v", img, err)
		}
		return img.Id
	}
	refOf := func(name string) (string, string) {
		t.Helper()
		id := sleeper(ctx, t, rt, sb, name)
		st, err := rt.ContainerStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return id, st.ImageRef
	}

	before := imageID()
	older, ref := refOf("older")
	if ref != before {
		t.Fatalf("imageRef %q, want the image's ID %q", ref, before)
	}

	// The same name, another image: its default command differs, so its
	// config (and ID) does.
	if _, err := ctdrt.Import(ctx, cfg.Address, cfg.Namespace, busyboxArchive(t, "true")); err != nil {
		t.Fatal(err)
	}
	// The runtime learns of the move from containerd's event.
	after := imageID()
	for deadline := time.Now().Add(5 * time.Second); after == before && time.Now().Before(deadline); after = imageID() {
		time.Sleep(10 * time.Millisecond)
	}
	if after == before {
		t.Fatal("busybox still names the first image after the second was imported")
	}
	if _, ref := refOf("newer"); ref != after {
		t.Errorf("a container made after the tag moved: imageRef %q, want %q", ref, after)
	}
	st, err := rt.ContainerStatus(ctx, older)
	if err != nil {
		t.Fatal(err)
	}
	if st.ImageRef != before {
		t.Errorf("a container made before the tag moved: imageRef %q, want %q", st.ImageRef, before)
	}
}

// The runtime's cache of image names follows containerd: an image
// another client deletes is soon reported missing, and one it imports
// again present.
func TestImageStatusFollowsOtherClients(t *testing.T) {
	rt, cfg := newRuntimeAndConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	present := func() bool {
		t.Helper()
		img, err := rt.ImageStatus(ctx, "busybox")
		if err != nil {
			t.Fatal(err)
		}
		return img != nil
	}
	waitFor := func(want bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); present() != want; {
			if time.Now().After(deadline) {
				t.Fatalf("busybox present: %v for 5s, want %v", !want, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(true)
	waitFor(true) // now from the cache

	client, nsCtx := otherClient(ctx, t, cfg)
	if err := client.ImageService().Delete(nsCtx, images.BusyboxName); err != nil {
		t.Fatal(err)
	}
	waitFor(false)

	if _, err := ctdrt.Import(ctx, cfg.Address, cfg.Namespace, busyboxArchive(t, "sh")); err != nil {
		t.Fatal(err)
	}
	waitFor(true)
}
