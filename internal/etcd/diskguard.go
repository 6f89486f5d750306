package etcd

import (
	"context"
	"log/slog"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"golang.org/x/sys/unix"
)

// DefaultDiskReserve is the free space under a member's data directory
// below which it stops taking writes. etcd needs room to cut a WAL
// segment (64 MiB, preallocated) and to grow its bbolt file; with less,
// a write fails half-way and etcd exits, and it cannot even start again
// until a segment fits. Refusing writes early keeps the member serving
// reads, and a little freed space brings writes back.
const DefaultDiskReserve = 256 << 20

// diskCheckInterval is how often the guard reads the free space.
const diskCheckInterval = time.Second

// nospaceAction says what the disk guard does with the member's NOSPACE
// alarm, given the free bytes, the reserve and whether the alarm is
// raised. It clears the alarm only once free space is back above twice
// the reserve, so a disk hovering at the line does not flap.
func nospaceAction(free, reserve uint64, raised bool) pb.AlarmRequest_AlarmAction {
	switch {
	case !raised && free < reserve:
		return pb.AlarmRequest_ACTIVATE
	case raised && free >= 2*reserve:
		return pb.AlarmRequest_DEACTIVATE
	default:
		return pb.AlarmRequest_GET
	}
}

// freeBytes is the space an unprivileged writer may still use under dir.
func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// guardDisk raises etcd's NOSPACE alarm while the data directory's disk
// is below reserve and clears it once there is room again. Under the
// alarm etcd itself refuses puts and transactions (the apiserver answers
// them with a clear Status) while reads, watches and deletes go on; the
// alarm is cluster-wide, so one member short of disk stops writes to all,
// as etcd's own quota alarm does.
func (m *Member) guardDisk(ctx context.Context, dir string, reserve uint64) {
	t := time.NewTicker(diskCheckInterval)
	defer t.Stop()
	for {
		m.checkDisk(ctx, dir, reserve)
		select {
		case <-ctx.Done():
			return
		case <-m.etcd.Server.StopNotify():
			return
		case <-t.C:
		}
	}
}

func (m *Member) checkDisk(ctx context.Context, dir string, reserve uint64) {
	free, err := freeBytes(dir)
	if err != nil {
		slog.Warn("etcd disk guard: cannot read free space", "dir", dir, "err", err)
		return
	}
	srv := m.etcd.Server
	raised := false
	for _, a := range srv.Alarms() {
		if a.Alarm == pb.AlarmType_NOSPACE && a.MemberID == uint64(srv.MemberID()) {
			raised = true
		}
	}
	action := nospaceAction(free, reserve, raised)
	if action == pb.AlarmRequest_GET {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = srv.Alarm(ctx, &pb.AlarmRequest{Action: action, MemberID: uint64(srv.MemberID()), Alarm: pb.AlarmType_NOSPACE})
	switch {
	case err != nil:
		slog.Warn("etcd disk guard: alarm not changed", "action", action, "err", err)
	case action == pb.AlarmRequest_ACTIVATE:
		slog.Error("etcd: disk almost full, writes are refused until space is freed (NOSPACE alarm)",
			"dir", dir, "freeBytes", free, "reserveBytes", reserve)
	default:
		slog.Info("etcd: disk space is back, writes are taken again (NOSPACE alarm cleared)", "dir", dir, "freeBytes", free)
	}
}
