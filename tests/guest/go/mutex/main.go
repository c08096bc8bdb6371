// sync.Mutex, sync.RWMutex, sync.Once, sync.Cond and a map guarded by a mutex: 16 goroutines
// x 5000 locked increments, readers under RLock never see a torn pair, Once runs once,
// Cond.Broadcast wakes every waiter, sync.Map gets every key.
package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
)

func main() {
	ok := true
	check := func(cond bool, what string) {
		if !cond {
			fmt.Println("FAIL:", what)
			ok = false
		}
	}

	var mu sync.Mutex
	counter := 0
	words := map[string]int{}
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 5000; i++ {
				mu.Lock()
				counter++
				words[fmt.Sprint("k", i%10)]++
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	keys := make([]string, 0, len(words))
	for k := range words {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println("mutex: counter", counter, "keys", keys, "k3 =", words["k3"])
	check(counter == 80000 && len(keys) == 10 && words["k3"] == 8000, "mutex")

	var rw sync.RWMutex
	x, y := 0, 0
	torn := 0
	var tornMu sync.Mutex
	var rwg sync.WaitGroup
	for w := 0; w < 2; w++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for i := 0; i < 2000; i++ {
				rw.Lock()
				x++
				y = 2 * x
				rw.Unlock()
			}
		}()
	}
	for r := 0; r < 4; r++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			bad := 0
			for i := 0; i < 2000; i++ {
				rw.RLock()
				if y != 2*x {
					bad++
				}
				rw.RUnlock()
			}
			tornMu.Lock()
			torn += bad
			tornMu.Unlock()
		}()
	}
	rwg.Wait()
	fmt.Println("rwmutex: x", x, "y", y, "torn reads", torn)
	check(x == 4000 && y == 8000 && torn == 0, "rwmutex")

	var once sync.Once
	runs := 0
	var owg sync.WaitGroup
	for i := 0; i < 20; i++ {
		owg.Add(1)
		go func() { defer owg.Done(); once.Do(func() { runs++ }) }()
	}
	owg.Wait()

	var cmu sync.Mutex
	cond := sync.NewCond(&cmu)
	ready, waiting, woke := false, 0, 0
	var cwg sync.WaitGroup
	for i := 0; i < 6; i++ {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			cmu.Lock()
			waiting++
			for !ready {
				cond.Wait()
			}
			woke++
			cmu.Unlock()
		}()
	}
	for {
		cmu.Lock()
		if waiting == 6 {
			ready = true
			cond.Broadcast()
			cmu.Unlock()
			break
		}
		cmu.Unlock()
		runtime.Gosched() // let the waiters run even with GOMAXPROCS=1 (no reliance on preemption)
	}
	cwg.Wait()

	var m sync.Map
	var mwg sync.WaitGroup
	for g := 0; g < 4; g++ {
		mwg.Add(1)
		go func(g int) {
			defer mwg.Done()
			for i := 0; i < 250; i++ {
				m.Store(g*250+i, i)
			}
		}(g)
	}
	mwg.Wait()
	entries := 0
	m.Range(func(k, v interface{}) bool { entries++; return true })
	fmt.Println("once ran", runs, "time(s); cond woke", woke, "of 6; sync.Map has", entries, "entries")
	check(runs == 1 && woke == 6 && entries == 1000, "once/cond/map")

	if !ok {
		os.Exit(1)
	}
	fmt.Println("mutex: ok")
}
