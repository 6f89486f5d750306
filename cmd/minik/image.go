package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"minik/deploy/images"
	ctdrt "minik/kubelet/runtime/containerd"
)

// imageCommand groups `minik image load` and `minik image build`.
func imageCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "Build and load container images without a registry"}
	cmd.AddCommand(imageLoadCommand(), imageBuildCommand())
	return cmd
}

func imageLoadCommand() *cobra.Command {
	var node, address, dataDir string
	cmd := &cobra.Command{
		Use:   "load FILE.tar",
		Short: "Import an OCI or docker image archive into the nodes' containerd",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			addr, err := findContainerd(ctx, address, dataDir)
			if err != nil {
				return err
			}
			var namespaces []string
			if node != "" {
				namespaces = []string{ctdrt.NamespaceFor(node)}
			} else if namespaces, err = ctdrt.Namespaces(ctx, addr); err != nil {
				return err
			}
			if len(namespaces) == 0 {
				return errors.New("no minik node found in containerd at " + addr + ": name one with --node")
			}
			for _, ns := range namespaces {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				names, err := ctdrt.Import(ctx, addr, ns, f)
				f.Close()
				if err != nil {
					return err
				}
				for _, n := range names {
					fmt.Fprintf(cmd.OutOrStdout(), "loaded %s into %s\n", n, ns)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&node, "node", "", "only this node (default: every minik node of that containerd)")
	f.StringVar(&address, "containerd-address", "", "containerd socket (default "+ctdrt.DefaultAddress+" if it answers, else the one of `minik up --data-dir DATA`)")
	f.StringVar(&dataDir, "data-dir", ".minik", "data dir of `minik up`, to find the containerd it started")
	return cmd
}

// findContainerd returns the containerd to use: the flag, the system one,
// or the one `minik up` started under DATA/containerd.
func findContainerd(ctx context.Context, address, dataDir string) (string, error) {
	if address != "" {
		return address, nil
	}
	if ctdrt.Answers(ctx, ctdrt.DefaultAddress, 2*time.Second) {
		return ctdrt.DefaultAddress, nil
	}
	sock := ctdrt.SocketFor(filepath.Join(dataDir, "containerd"))
	if ctdrt.Answers(ctx, sock, 2*time.Second) {
		return sock, nil
	}
	return "", fmt.Errorf("no containerd answers at %s or %s: is `minik up` running? (or pass --containerd-address)", ctdrt.DefaultAddress, sock)
}

func imageBuildCommand() *cobra.Command {
	var out, busybox string
	cmd := &cobra.Command{
		Use:   "build busybox -o FILE.tar",
		Short: "Build the busybox image from Debian's busybox package and the glibc files it loads, as an OCI archive",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "busybox" {
				return fmt.Errorf("unknown image %q: minik builds only busybox", args[0])
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return err
			}
			if err := images.BuildBusybox(out, busybox); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%s)\n", out, images.BusyboxName)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "bin/images/busybox.tar", "archive to write")
	cmd.Flags().StringVar(&busybox, "busybox", images.DefaultBusyboxPath, "Debian's busybox .deb (make deps downloads it), or a busybox binary")
	return cmd
}
