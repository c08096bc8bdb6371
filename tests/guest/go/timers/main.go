// Timers with output that does not depend on timing: time.Sleep sleeps at least as long as
// asked, a Ticker delivers 5 ticks then stops, time.After wins a select against a channel
// nobody sends on, Stop reports an active and then a stopped Timer, Reset fires once, AfterFunc
// runs its function, 20 goroutines sleeping different times all wake, and a relay of 5
// goroutines, each sleeping before it hands a baton on, takes at least the sum of its sleeps.
package main

import (
	"fmt"
	"os"
	"sync"
	"time"
)

func main() {
	ok := true
	check := func(cond bool, what string) {
		if !cond {
			fmt.Println("FAIL:", what)
			ok = false
		}
	}

	start := time.Now()
	time.Sleep(30 * time.Millisecond)
	slept := time.Since(start)
	fmt.Println("sleep: at least 30ms:", slept >= 30*time.Millisecond)
	check(slept >= 30*time.Millisecond, "sleep")

	tickStart := time.Now()
	ticker := time.NewTicker(5 * time.Millisecond)
	ticks := 0
	for range ticker.C {
		ticks++
		if ticks == 5 {
			break
		}
	}
	ticker.Stop()
	fmt.Println("ticker: ticks", ticks, "at least 25ms:", time.Since(tickStart) >= 25*time.Millisecond)
	check(ticks == 5 && time.Since(tickStart) >= 25*time.Millisecond, "ticker")

	nobody := make(chan int)
	which := ""
	select {
	case <-nobody:
		which = "channel"
	case <-time.After(20 * time.Millisecond):
		which = "time.After"
	}
	fmt.Println("select: won by", which)
	check(which == "time.After", "after")

	timer := time.NewTimer(time.Hour)
	wasActive := timer.Stop()    // true: an hour is not up yet
	stoppedAgain := timer.Stop() // false: already stopped
	timer.Reset(10 * time.Millisecond)
	<-timer.C
	firedTwice := false
	select {
	case <-timer.C:
		firedTwice = true
	case <-time.After(30 * time.Millisecond):
	}
	done := make(chan string, 1)
	time.AfterFunc(10*time.Millisecond, func() { done <- "AfterFunc ran" })
	msg := <-done
	fmt.Println("timer: Stop", wasActive, "then", stoppedAgain, "| Reset fired once:", !firedTwice, "|", msg)
	check(wasActive && !stoppedAgain && !firedTwice, "timer")

	var wg sync.WaitGroup
	var mu sync.Mutex
	woke := 0
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			time.Sleep(time.Duration(i%5+1) * time.Millisecond)
			mu.Lock()
			woke++
			mu.Unlock()
		}(i)
	}
	wg.Wait()

	relayStart := time.Now()
	baton := make(chan int)
	first := baton
	for i := 0; i < 5; i++ {
		next := make(chan int)
		go func(in <-chan int, out chan<- int, i int) {
			v := <-in
			time.Sleep(time.Duration(i+1) * 2 * time.Millisecond)
			out <- v*10 + i
		}(baton, next, i)
		baton = next
	}
	first <- 9
	relayed := <-baton
	relayTime := time.Since(relayStart)
	fmt.Println("sleepers: woke", woke, "of 20; relay:", relayed, "at least 30ms:", relayTime >= 30*time.Millisecond)
	check(woke == 20 && relayed == 901234 && relayTime >= 30*time.Millisecond, "sleepers")

	if !ok {
		os.Exit(1)
	}
	fmt.Println("timers: ok")
}
