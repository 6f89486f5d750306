package main

import (
	"errors"

	"github.com/spf13/cobra"

	"minik/scheduler"
)

// explainCommand shows how the scheduler decides for a pod: every node
// with each filter's verdict, each score, and the chosen node.
func explainCommand() *cobra.Command {
	var kubeconfigPath, namespace string
	cmd := &cobra.Command{
		Use:   "explain pod NAME",
		Short: "Show how the scheduler decides where a pod goes (or why it cannot)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "pod" && args[0] != "pods" && args[0] != "po" {
				return errors.New(`only pods can be explained: minik explain pod NAME [-n NS]`)
			}
			c, err := clientFromKubeconfig(kubeconfigPath, "minik-explain")
			if err != nil {
				return err
			}
			e, err := scheduler.ExplainFromAPI(cmd.Context(), c, namespace, args[1])
			if err != nil {
				return err
			}
			return e.Write(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfig of the cluster (default $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace of the pod")
	return cmd
}
