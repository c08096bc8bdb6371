// Goroutines and sync.WaitGroup: 100 goroutines each sum a slice of 1..1,000,000 into their
// own slot; 1000 tiny goroutines bump an atomic counter; results are printed after Wait.
package main

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

func main() {
	const workers, n = 100, 1000000
	sums := make([]uint64, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var s uint64
			for i := uint64(1 + n*w/workers); i <= uint64(n*(w+1)/workers); i++ {
				s += i * i
			}
			sums[w] = s
		}(w)
	}
	wg.Wait()
	var total uint64
	for _, s := range sums {
		total += s
	}

	var count int64
	var wg2 sync.WaitGroup
	for i := 0; i < 1000; i++ {
		wg2.Add(1)
		go func(i int) {
			defer wg2.Done()
			if i%7 == 0 {
				runtime.Gosched()
			}
			atomic.AddInt64(&count, int64(i))
		}(i)
	}
	wg2.Wait()

	want := uint64(n) * (n + 1) * (2*n + 1) / 6
	fmt.Printf("sum of squares 1..%d over %d goroutines: %d (want %d)\n", n, workers, total, want)
	fmt.Printf("1000 goroutines added %d\n", count)
	if total != want || count != 999*1000/2 {
		fmt.Println("FAIL")
		os.Exit(1)
	}
	fmt.Println("waitgroup: ok")
}
