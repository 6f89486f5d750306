package containerd_test

import (
	"context"
	"slices"
	"testing"
	"time"

	containerd "github.com/containerd/containerd"

	ctdrt "minik/kubelet/runtime/containerd"
)

// A sandbox's containers are read by the IDs the runtime indexes. The
// listing still follows containerd: a container deleted behind the
// runtime's back leaves it at once, one made by another client joins it
// after a listing of the whole node, and a restarted runtime starts from
// what containerd holds.
func TestSandboxListingFollowsContainerd(t *testing.T) {
	rt, cfg := newRuntimeAndConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := func(sb, name string) string { return sleeper(ctx, t, rt, sb, name) }
	listed := func(rt *ctdrt.Runtime, sb string) []string {
		t.Helper()
		cs, err := rt.ListContainers(ctx, sb)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range cs {
			if c.PodSandboxId != sb {
				t.Errorf("sandbox %s's listing holds %s of sandbox %s", sb, c.Id, c.PodSandboxId)
			}
			ids = append(ids, c.Id)
		}
		slices.Sort(ids)
		return ids
	}
	sorted := func(ids ...string) []string { slices.Sort(ids); return ids }

	sb1, sb2 := hostSandbox(ctx, t, rt, "one"), hostSandbox(ctx, t, rt, "two")
	c1, c2 := create(sb1, "a"), create(sb2, "b")
	if got := listed(rt, sb1); !slices.Equal(got, []string{c1}) {
		t.Fatalf("sandbox one lists %v, want [%s]", got, c1)
	}
	if got := listed(rt, sb2); !slices.Equal(got, []string{c2}) {
		t.Fatalf("sandbox two lists %v, want [%s]", got, c2)
	}

	client, nsCtx := otherClient(ctx, t, cfg)
	c, err := client.LoadContainer(nsCtx, c1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(nsCtx, containerd.WithSnapshotCleanup); err != nil {
		t.Fatal(err)
	}
	if got := listed(rt, sb1); len(got) != 0 {
		t.Fatalf("sandbox one lists %v after its container was deleted in containerd, want none", got)
	}

	// Another client makes a container of sandbox two (a copy of c2's
	// record, without its snapshot).
	info, err := client.ContainerService().Get(nsCtx, c2)
	if err != nil {
		t.Fatal(err)
	}
	info.ID, info.SnapshotKey = "made-elsewhere", ""
	if _, err := client.ContainerService().Create(nsCtx, info); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ListContainers(ctx, ""); err != nil { // the relist
		t.Fatal(err)
	}
	if got, want := listed(rt, sb2), sorted(c2, "made-elsewhere"); !slices.Equal(got, want) {
		t.Fatalf("after the node's listing sandbox two lists %v, want %v", got, want)
	}

	restarted, err := ctdrt.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
	if got, want := listed(restarted, sb2), sorted(c2, "made-elsewhere"); !slices.Equal(got, want) {
		t.Fatalf("a restarted runtime lists %v for sandbox two, want %v", got, want)
	}
	if got := listed(restarted, sb1); len(got) != 0 {
		t.Fatalf("a restarted runtime lists %v for sandbox one, want none", got)
	}
}
