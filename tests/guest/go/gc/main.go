// The garbage collector under allocation pressure, with goroutines: 8 goroutines build and
// drop linked lists, maps, slices and strings (over 100 MB allocated in all, a few MB
// live), runtime.GC is forced between rounds, and finalizers run for dropped objects. The
// checksum of what was built does not depend on when collections happen.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

type node struct {
	val  uint64
	next *node
	pad  [6]uint64
}

func churn(seed uint64, rounds int) uint64 {
	var sum uint64
	x := seed
	for r := 0; r < rounds; r++ {
		var head *node
		for i := 0; i < 2000; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			head = &node{val: x % 1000003, next: head}
		}
		m := make(map[string]int, 64)
		for n := head; n != nil; n = n.next {
			sum += n.val
			if n.val%31 == 0 {
				m[strconv.FormatUint(n.val, 36)]++
			}
		}
		s := make([]byte, 0, 16)
		for k, v := range m { // map order is random; the sum below is not
			s = append(s[:0], k...)
			sum += uint64(len(s) * v)
		}
		buf := make([]uint64, 4096)
		for i := range buf {
			buf[i] = uint64(i) * x
		}
		sum += buf[4095] % 1000
	}
	return sum
}

func main() {
	const goroutines, rounds = 8, 90
	results := make([]uint64, goroutines)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for part := 0; part < 3; part++ {
				results[g] += churn(uint64(g*7919+part+1), rounds/3)
				if g == 0 {
					runtime.GC()
				}
			}
		}(g)
	}
	wg.Wait()

	finalized := make(chan int, 100)
	for i := 0; i < 100; i++ {
		obj := &node{val: uint64(i)}
		runtime.SetFinalizer(obj, func(n *node) { finalized <- int(n.val) })
	}
	got, total := 0, 0
	deadline := time.After(30 * time.Second)
	for got < 100 {
		runtime.GC()
		select {
		case v := <-finalized:
			got++
			total += v
		case <-deadline:
			fmt.Println("FAIL: finalizers did not run:", got, "of 100")
			os.Exit(1)
		case <-time.After(time.Millisecond):
		}
	}

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var check uint64
	for _, r := range results {
		check = check*1000003 + r
	}
	fmt.Printf("gc: checksum %016x\n", check)
	fmt.Println("finalizers ran:", got, "sum", total)
	fmt.Println("collections happened:", ms.NumGC > 3, "allocated more than 64 MB:", ms.TotalAlloc > 64<<20)
	if got != 100 || total != 4950 || ms.NumGC <= 3 || ms.TotalAlloc <= 64<<20 {
		fmt.Println("FAIL")
		os.Exit(1)
	}
	fmt.Println("gc: ok")
}
