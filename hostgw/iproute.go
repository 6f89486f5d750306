package hostgw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
)

// Routes is the kernel's routing table as hostgw sees it: only the routes
// tagged with Protocol.
type Routes interface {
	List(ctx context.Context) ([]Route, error)
	Replace(ctx context.Context, r Route) error
	Delete(ctx context.Context, r Route) error
}

// IPRoute drives the routing table of the calling thread's network
// namespace with iproute2's `ip` (Debian's iproute2).
type IPRoute struct{}

var _ Routes = IPRoute{}

func (IPRoute) run(ctx context.Context, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// List returns the routes tagged with Protocol.
func (ip IPRoute) List(ctx context.Context) ([]Route, error) {
	var out []Route
	for _, family := range []string{"-4", "-6"} {
		b, err := ip.run(ctx, family, "-j", "route", "show", "proto", strconv.Itoa(Protocol))
		if err != nil {
			return nil, err
		}
		var rows []struct {
			Dst     string `json:"dst"`
			Gateway string `json:"gateway"`
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if err := json.Unmarshal(b, &rows); err != nil {
			return nil, fmt.Errorf("ip route show: %w: %s", err, b)
		}
		for _, r := range rows {
			dst, err1 := netip.ParsePrefix(r.Dst)
			via, err2 := netip.ParseAddr(r.Gateway)
			if err := errors.Join(err1, err2); err != nil {
				continue // not one of ours in shape (no gateway): leave it
			}
			out = append(out, Route{Dst: dst, Via: via})
		}
	}
	return out, nil
}

// Replace installs r, replacing a route to the same destination.
func (ip IPRoute) Replace(ctx context.Context, r Route) error {
	_, err := ip.run(ctx, "route", "replace", r.Dst.String(), "via", r.Via.String(), "proto", strconv.Itoa(Protocol))
	return err
}

// Delete removes r.
func (ip IPRoute) Delete(ctx context.Context, r Route) error {
	_, err := ip.run(ctx, "route", "del", r.Dst.String(), "via", r.Via.String(), "proto", strconv.Itoa(Protocol))
	return err
}
