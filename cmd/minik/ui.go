package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"minik/internal/pki"
	"minik/ui"
)

// uiCommand serves the live view of a cluster on its own.
func uiCommand() *cobra.Command {
	var kubeconfigPath, listen, certFile, keyFile string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the live view of a cluster (nodes and pods, a pod's path, the scheduler's verdicts, Services and their endpoints, claims and volumes, Events) in a browser",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := clientFromKubeconfig(kubeconfigPath, "minik-ui")
			if err != nil {
				return err
			}
			s := ui.New(c, slog.Default())
			link, err := ui.Serve(cmd.Context(), s, listen, certFile, keyFile)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "live view: open %s (a one-time login link)\n", link)
			return s.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfig of the cluster (default $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&listen, "listen", "127.0.0.1:8443", "HTTPS address of the view")
	f.StringVar(&certFile, "tls-cert-file", "", "serving certificate (default: a self-signed one for localhost)")
	f.StringVar(&keyFile, "tls-private-key-file", "", "serving key")
	return cmd
}

// startUpUI serves the live view of `minik up`, with a certificate of the
// cluster's CA, as the admin (it reads everything, writes nothing).
func startUpUI(ctx context.Context, listen, dataDir string, files *clusterFiles, run func(string, func(context.Context) error)) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return err
	}
	certFile, keyFile, err := files.ca.EnsureServing(files.pkiDir, "ui-serving", []string{host})
	if err != nil {
		return err
	}
	path := filepath.Join(dataDir, "ui.kubeconfig")
	if err := files.writeKubeconfig(path, "ui", pki.AdminUser, []string{pki.MastersGroup}); err != nil {
		return err
	}
	c, err := clientFromKubeconfig(path, "minik-ui")
	if err != nil {
		return err
	}
	s := ui.New(c, slog.Default())
	link, err := ui.Serve(ctx, s, listen, certFile, keyFile)
	if err != nil {
		return err
	}
	run("ui", s.Run)
	slog.Info("live view", "open", link, "ca", filepath.Join(files.pkiDir, "ca.crt"))
	fmt.Fprintf(os.Stderr, "live view: open %s (a one-time login link; the browser must trust %s)\n", link, filepath.Join(files.pkiDir, "ca.crt"))
	return nil
}
