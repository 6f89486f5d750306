package runtime

import (
	"fmt"

	"github.com/distribution/reference"
)

// NormalizeImage turns a pod's image into the full reference a runtime
// stores ("busybox" → "docker.io/library/busybox:latest").
func NormalizeImage(image string) (string, error) {
	named, err := reference.ParseDockerRef(image)
	if err != nil {
		return "", fmt.Errorf("%q: %w", image, ErrInvalidImageName)
	}
	return named.String(), nil
}
