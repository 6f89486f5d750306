package etcd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"golang.org/x/sys/unix"
)

func TestNospaceActionRaisesBelowTheReserveAndClearsAboveTwiceIt(t *testing.T) {
	const reserve = 100
	cases := []struct {
		name   string
		free   uint64
		raised bool
		want   pb.AlarmRequest_AlarmAction
	}{
		{"plenty of space, no alarm: nothing to do", 1000, false, pb.AlarmRequest_GET},
		{"below the reserve: raise", 99, false, pb.AlarmRequest_ACTIVATE},
		{"below the reserve, already raised: nothing to do", 10, true, pb.AlarmRequest_GET},
		{"back above the reserve but not twice it: keep the alarm", 150, true, pb.AlarmRequest_GET},
		{"twice the reserve: clear", 200, true, pb.AlarmRequest_DEACTIVATE},
		{"exactly the reserve, no alarm: nothing to do", 100, false, pb.AlarmRequest_GET},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := nospaceAction(c.free, reserve, c.raised); got != c.want {
				t.Fatalf("nospaceAction(%d, %d, %v) = %v, want %v", c.free, reserve, c.raised, got, c.want)
			}
		})
	}
}

// TestFullDiskRefusesWritesKeepsReadsAndRecovers runs a member on a small
// tmpfs, fills the disk below the reserve, and checks that writes are
// refused with etcd's NOSPACE error while reads go on and the member
// lives, also across a restart on the full disk; once the filler is
// removed, writes are taken again.
func TestFullDiskRefusesWritesKeepsReadsAndRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs and starts an etcd member; skipped under -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("mounting a small filesystem needs root (CI runs as root)")
	}
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=256m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })

	const reserve = 48 << 20
	cfg := MemberConfig{
		Name:             "disk",
		DataDir:          filepath.Join(mnt, "etcd"),
		ListenClientURLs: []string{"unix://" + filepath.Join(mnt, "c.sock")},
		ListenPeerURLs:   []string{"unix://" + filepath.Join(mnt, "p.sock")},
		Quiet:            true,
		DiskReserve:      reserve,
	}
	m, err := StartMember(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { m.Close() }()
	cli := v3client.New(m.etcd.Server)
	defer func() { cli.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/a", "before"); err != nil {
		t.Fatal(err)
	}

	// Fill the disk to 16 MiB free: below the reserve, still room for etcd.
	free, err := freeBytes(mnt)
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(free)-16<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()

	var putErr error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, putErr = cli.Put(ctx, "/b", "while full"); putErr != nil {
			break
		}
	}
	if !errors.Is(putErr, rpctypes.ErrNoSpace) && (putErr == nil || putErr.Error() != rpctypes.ErrNoSpace.Error()) {
		t.Fatalf("a write on a full disk: got %v, want %v", putErr, rpctypes.ErrNoSpace)
	}
	got, err := cli.Get(ctx, "/a")
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "before" {
		t.Fatalf("a read on a full disk: %v %v", got, err)
	}

	// A restart on the full disk comes up, serves reads, refuses writes.
	cli.Close()
	m.Close()
	if m, err = StartMember(context.Background(), cfg); err != nil {
		t.Fatalf("restart on a full disk: %v", err)
	}
	cli = v3client.New(m.etcd.Server)
	if got, err := cli.Get(ctx, "/a"); err != nil || len(got.Kvs) != 1 {
		t.Fatalf("a read after the restart on a full disk: %v %v", got, err)
	}
	if _, err := cli.Put(ctx, "/b", "restarted"); err == nil || err.Error() != rpctypes.ErrNoSpace.Error() {
		t.Fatalf("a write after the restart on a full disk: %v, want %v", err, rpctypes.ErrNoSpace)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, putErr = cli.Put(ctx, "/b", "after"); putErr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes did not come back once space was freed: %v", putErr)
		}
	}
	select {
	case err := <-m.Err():
		t.Fatalf("the member stopped: %v", err)
	default:
	}
}
