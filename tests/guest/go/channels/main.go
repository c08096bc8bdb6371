// Channels: an unbuffered pipeline of three stages (generate, square, sum), a buffered
// channel used as a semaphore and as a queue drained after close, select with several ready
// cases (counts per case, whatever the choice), select with default, a nil channel that is
// never chosen, and a fan-in of 8 producers closed by a WaitGroup.
package main

import (
	"fmt"
	"os"
	"sync"
)

func gen(n int) <-chan int {
	out := make(chan int)
	go func() {
		for i := 1; i <= n; i++ {
			out <- i
		}
		close(out)
	}()
	return out
}

func square(in <-chan int) <-chan int {
	out := make(chan int)
	go func() {
		for v := range in {
			out <- v * v
		}
		close(out)
	}()
	return out
}

func main() {
	ok := true
	check := func(cond bool, what string) {
		if !cond {
			fmt.Println("FAIL:", what)
			ok = false
		}
	}

	sum := 0
	for v := range square(gen(1000)) {
		sum += v
	}
	fmt.Println("pipeline: sum of squares 1..1000 =", sum)
	check(sum == 1000*1001*2001/6, "pipeline")

	buf := make(chan int, 16)
	for i := 0; i < 16; i++ {
		buf <- i
	}
	close(buf)
	drained := 0
	for v := range buf {
		drained += v
	}
	v, open := <-buf
	fmt.Println("buffered: drained", drained, "then receive on closed:", v, open)
	check(drained == 120 && v == 0 && !open, "buffered")

	a, b := make(chan int, 100), make(chan int, 100)
	quit := make(chan struct{})
	var never chan int // nil: a select never picks it
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 500; i++ {
			a <- 1
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 300; i++ {
			b <- 2
		}
	}()
	go func() { wg.Wait(); close(quit) }()
	fromA, fromB, fromNever := 0, 0, 0
	for done := false; !done; {
		select {
		case x := <-a:
			fromA += x
		case x := <-b:
			fromB += x
		case <-never:
			fromNever++
		case <-quit:
			done = true
		}
	}
	for len(a) > 0 { // quit may win while values are still buffered
		fromA += <-a
	}
	for len(b) > 0 {
		fromB += <-b
	}
	fmt.Println("select: from a", fromA, "from b", fromB, "from nil", fromNever)
	check(fromA == 500 && fromB == 600 && fromNever == 0, "select")

	full := make(chan int, 1)
	full <- 1
	sentWhenFull := true
	select {
	case full <- 2:
	default:
		sentWhenFull = false
	}
	empty := make(chan int)
	gotWhenEmpty := true
	select {
	case <-empty:
	default:
		gotWhenEmpty = false
	}
	fmt.Println("select default: sent to full", sentWhenFull, "received from empty", gotWhenEmpty)
	check(!sentWhenFull && !gotWhenEmpty, "default")

	results := make(chan int)
	var producers sync.WaitGroup
	for p := 0; p < 8; p++ {
		producers.Add(1)
		go func(p int) {
			defer producers.Done()
			for i := 0; i < 100; i++ {
				results <- p*1000 + i
			}
		}(p)
	}
	go func() { producers.Wait(); close(results) }()
	count, total := 0, 0
	for r := range results {
		count++
		total += r
	}
	fmt.Println("fan-in:", count, "values, total", total)
	check(count == 800 && total == 100*1000*28+8*4950, "fan-in")

	if !ok {
		os.Exit(1)
	}
	fmt.Println("channels: ok")
}
