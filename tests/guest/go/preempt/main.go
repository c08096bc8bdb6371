// Goroutine preemption: with GOMAXPROCS=1 (and with 2), goroutines spinning in loops with no
// function calls (so no cooperative preemption points) must not starve the main goroutine,
// whose 20ms sleep has to end while they spin: the runtime's sysmon thread notices them and
// preempts them asynchronously with a signal (SIGURG). Main then stops the spinners through
// an atomic flag and waits for them.
package main

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

func spinAll(procs int) int32 {
	runtime.GOMAXPROCS(procs)
	var stop, exited int32
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for atomic.LoadInt32(&stop) == 0 {
			}
			atomic.AddInt32(&exited, 1)
		}()
	}
	time.Sleep(20 * time.Millisecond)
	atomic.StoreInt32(&stop, 1)
	wg.Wait()
	return atomic.LoadInt32(&exited)
}

func main() {
	fmt.Println("GOMAXPROCS=1: spinners stopped after main's sleep:", spinAll(1), "of 3")
	fmt.Println("GOMAXPROCS=2: spinners stopped after main's sleep:", spinAll(2), "of 3")
	fmt.Println("preempt: ok")
}
