// Package imagelocality prefers nodes that already have the pod's images,
// weighted by image size and by how many nodes have them (an image on
// every node says little about this one).
package imagelocality

import (
	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/cache"
	"minik/scheduler/framework"
)

// Name is the plugin's name in the registry.
const Name = "ImageLocality"

// Thresholds of the score: below minThreshold of image bytes a node scores
// 0; at maxContainerThreshold per container it scores 100.
const (
	minThreshold          int64 = 23 * 1024 * 1024
	maxContainerThreshold int64 = 1000 * 1024 * 1024
)

// Keys of this plugin's cycle state.
var (
	stateKey = framework.NewStateKey("PreScore" + Name)
)

// ImageLocality is a score plugin.
type ImageLocality struct{}

var (
	_ framework.PreScorePlugin = &ImageLocality{}
	_ framework.ScorePlugin    = &ImageLocality{}
)

// New returns the plugin.
func New() *ImageLocality { return &ImageLocality{} }

// Name implements framework.Plugin.
func (*ImageLocality) Name() string { return Name }

type preScoreState struct {
	images     []string // normalized names, one per container
	totalNodes int
}

// PreScore normalizes the pod's image names once.
func (*ImageLocality) PreScore(state *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo, snap framework.SharedLister) *framework.Status {
	s := &preScoreState{totalNodes: len(snap.List())}
	for _, c := range pod.Spec.InitContainers {
		s.images = append(s.images, cache.NormalizeImageName(c.Image))
	}
	for _, c := range pod.Spec.Containers {
		s.images = append(s.images, cache.NormalizeImageName(c.Image))
	}
	state.Write(stateKey, s)
	return nil
}

// Score implements framework.ScorePlugin.
func (*ImageLocality) Score(state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, stateKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	var sum int64
	for _, img := range s.images {
		if st, ok := ni.ImageStates[img]; ok && s.totalNodes > 0 {
			sum += int64(float64(st.Size) * float64(st.NumNodes) / float64(s.totalNodes))
		}
	}
	return Score(sum, len(s.images)), nil
}

// Score maps the spread-scaled image bytes of a pod with n containers to
// 0..100 between minThreshold and n * maxContainerThreshold.
func Score(sum int64, n int) int64 {
	maxThreshold := maxContainerThreshold * int64(max(n, 1))
	sum = min(max(sum, minThreshold), maxThreshold)
	return framework.MaxNodeScore * (sum - minThreshold) / (maxThreshold - minThreshold)
}

// NormalizeScore leaves the scores, which are already 0..100.
func (*ImageLocality) NormalizeScore(*framework.CycleState, *corev1.Pod, []framework.NodeScore) *framework.Status {
	return nil
}
