package benchkit

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"time"
)

// Emit prints one JSON line on stdout: a figure, as every benchmark
// reports it (bench/REPORT.md is made from these lines).
func Emit(line map[string]any) {
	if _, ok := line["cpus"]; !ok {
		line["cpus"] = runtime.NumCPU()
	}
	b, err := json.Marshal(line)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchkit:", err)
		return
	}
	fmt.Println(string(b))
}

// Round keeps d decimals.
func Round(f float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(f*p) / p
}

// Ms is d in milliseconds, to the microsecond.
func Ms(d time.Duration) float64 { return Round(float64(d)/float64(time.Millisecond), 3) }

// Quantile is the q-quantile (0..1) of ds by the nearest rank, as the
// Kubernetes SLIs compute percentiles; ds is sorted in place.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// LoadAvg is the 1-minute load average, quoted beside every figure since
// the machine is shared.
func LoadAvg() float64 {
	data, _ := os.ReadFile("/proc/loadavg")
	var l float64
	fmt.Sscanf(string(data), "%f", &l)
	return l
}
