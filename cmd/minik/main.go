// Command minik is the multi-call binary: `minik up` runs a whole
// cluster in one process; the other subcommands run one component each.
//
// tlssha1=1: a TLS 1.2 client that sends no signature_algorithms (the
// wget of Debian's busybox, the default image's) may be answered with a
// SHA-1 signature, as RFC 5246 says and as Go did before 1.26; without
// it, pods could not reach the API with the image minik ships.
//
//go:debug tlssha1=1
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "minik",
		Short:         "A small, real container orchestrator with the Kubernetes API",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var verbose bool
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "log at debug level")
	root.PersistentPreRun = func(*cobra.Command, []string) {
		level := slog.LevelInfo
		if verbose {
			level = slog.LevelDebug
		}
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	}
	root.AddCommand(upCommand(), apiserverCommand(), etcdCommand(), schedulerCommand(), controllerCommand(),
		kubeletCommand(), criCommand(), imageCommand(), explainCommand(), uiCommand(), dnsCommand(), proxyCommand(), certsCommand(), routesCommand(), resetCommand(), hollowCommand())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "minik:", err)
		os.Exit(1)
	}
}
