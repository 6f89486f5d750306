package main

import (
	"context"
	"sync"
	"time"
)

// closedLoop runs start(i) for i in [0, n), conc at a time (a worker
// starts the next as soon as its last one is done), and returns how long
// each took and the CPU time per item of each meter meanwhile. It stops
// at the first error.
func closedLoop(ctx context.Context, n, conc int, meters []cpuMeter, start func(i int) error) ([]time.Duration, map[string]time.Duration, error) {
	next := make(chan int)
	go func() {
		defer close(next)
		for i := 0; i < n && ctx.Err() == nil; i++ {
			next <- i
		}
	}()
	cpu := map[string]time.Duration{}
	for _, m := range meters {
		cpu[m.name] = -m.read()
	}
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	errc := make(chan error, conc)
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				if err := start(i); err != nil {
					errc <- err
					for range next { // let the feeder finish
					}
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	for _, m := range meters {
		cpu[m.name] = (cpu[m.name] + m.read()) / time.Duration(n)
	}
	select {
	case err := <-errc:
		return nil, nil, err
	default:
	}
	return lat, cpu, nil
}
