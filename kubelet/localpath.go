package kubelet

import (
	"path/filepath"

	"minik/internal/volumeutil"
)

// localPathDir is where this kubelet keeps local-path volumes, one
// directory per PersistentVolume: RootDir/local-path/PV.
func (k *Kubelet) localPathDir() string {
	return filepath.Join(k.cfg.RootDir, volumeutil.LocalPathDir)
}
