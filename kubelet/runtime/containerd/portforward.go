package containerd

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	goruntime "runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// PortForward connects to port on the sandbox's localhost and copies both
// ways (kubectl port-forward). The socket is made by a thread that entered
// the sandbox's network namespace, as containerd's CRI plugin does: a
// socket stays in the namespace it was made in, so a server that listens
// on the pod's 127.0.0.1 only is reached too.
func (r *Runtime) PortForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriter) error {
	sb, err := r.sandbox(sandboxID)
	if err != nil {
		return err
	}
	if port <= 0 || port > 65535 {
		return fmt.Errorf("port-forward: invalid port %d", port)
	}
	conn, err := dialLocalhost(ctx, sb.NetNS, port)
	if err != nil {
		return fmt.Errorf("port-forward to port %d of pod %s/%s: %w", port, sb.Namespace, sb.Name, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	go func() {
		_, _ = io.Copy(conn, stream)
		_ = conn.CloseWrite() // the client is done sending
	}()
	_, err = io.Copy(stream, conn)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// dialLocalhost dials port on localhost (IPv4, then IPv6) in the network
// namespace at nsPath ("" for the host's, for hostNetwork pods).
func dialLocalhost(ctx context.Context, nsPath string, port int32) (*net.TCPConn, error) {
	dial := func() (*net.TCPConn, error) {
		var d net.Dialer
		var firstErr error
		for _, host := range []string{"127.0.0.1", "::1"} {
			c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
			if err == nil {
				return c.(*net.TCPConn), nil
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		return nil, firstErr
	}
	if nsPath == "" {
		return dial()
	}
	type result struct {
		c   *net.TCPConn
		err error
	}
	done := make(chan result, 1)
	go func() {
		goruntime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			goruntime.UnlockOSThread()
			done <- result{nil, err}
			return
		}
		defer orig.Close()
		target, err := os.Open(nsPath)
		if err != nil {
			goruntime.UnlockOSThread()
			done <- result{nil, fmt.Errorf("the pod's network namespace: %w", err)}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			goruntime.UnlockOSThread()
			done <- result{nil, fmt.Errorf("entering the pod's network namespace: %w", err)}
			return
		}
		c, err := dial()
		// Back to the host's namespace; a thread that cannot return stays
		// locked, and Go discards it when this goroutine ends.
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			goruntime.UnlockOSThread()
		}
		done <- result{c, err}
	}()
	res := <-done
	return res.c, res.err
}
