// panic and recover: recover a panic(value) and a runtime error (index out of range, nil
// map write, integer divide by zero (an explicit check: arm64 division does not trap), nil
// pointer dereference (a SIGSEGV the runtime turns into a panic)), deferred calls run in
// LIFO order, a panic in a goroutine recovered there, re-panic from a deferred function,
// and errors.As on a runtime.Error.
//
//	panics          all of the above, exit 0
//	panics crash    an unrecovered panic in a goroutine: the runtime prints it and exits 2
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
)

func try(name string, f func()) (msg string) {
	defer func() {
		r := recover()
		switch e := r.(type) {
		case nil:
			msg = name + ": no panic"
		case runtime.Error:
			msg = name + ": runtime error: " + strings.TrimPrefix(e.Error(), "runtime error: ")
		case error:
			msg = name + ": error: " + e.Error()
		default:
			msg = fmt.Sprintf("%s: value: %v", name, e)
		}
	}()
	f()
	return
}

type point struct{ x int }

var sink int

func main() {
	if len(os.Args) > 1 && os.Args[1] == "crash" {
		fmt.Println("panics: crashing a goroutine")
		done := make(chan bool)
		go func() {
			defer close(done)
			panic("unrecovered in a goroutine")
		}()
		<-done
		select {}
	}

	var order []int
	lines := []string{
		try("value", func() { panic(42) }),
		try("error", func() { panic(errors.New("custom")) }),
		try("index", func() {
			s := []int{1, 2, 3}
			i := len(os.Args) + 5
			sink = s[i]
		}),
		try("nil map", func() {
			var m map[string]int
			m["x"] = 1
		}),
		try("divide", func() {
			z := len(os.Args) - 1
			sink = 10 / z
		}),
		try("nil pointer", func() {
			var p *point
			if len(os.Args) < 100 {
				sink = p.x
			}
		}),
		try("defers", func() {
			for i := 1; i <= 3; i++ {
				defer func(i int) { order = append(order, i) }(i)
			}
			panic("after defers")
		}),
		try("repanic", func() {
			defer func() {
				r := recover()
				panic(fmt.Sprint("re-", r))
			}()
			panic("first")
		}),
		try("none", func() {}),
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	fmt.Println("deferred order:", order)

	var wg sync.WaitGroup
	recovered := make([]string, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			recovered[g] = try(fmt.Sprint("goroutine ", g), func() {
				var arr []int
				sink = arr[g]
			})
		}(g)
	}
	wg.Wait()
	for _, r := range recovered {
		fmt.Println(r)
	}

	var re runtime.Error
	err := func() (err error) {
		defer func() { err, _ = recover().(error) }()
		var m map[int]int
		m[0] = 0
		return nil
	}()
	fmt.Println("errors.As runtime.Error:", errors.As(err, &re))
	fmt.Println("panics: ok")
}
