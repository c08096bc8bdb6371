// Go's os/exec: the runtime starts children with clone(CLONE_VM|CLONE_VFORK) from a
// process with several threads, reports exec errors through a pipe, and waits with wait4.
// Usage: go_exec BUSYBOX
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

func main() {
	bb := os.Args[1]
	out, err := exec.Command(bb, "echo", "hello from a child").Output()
	fmt.Printf("echo: %q %v\n", out, err)

	cmd := exec.Command(bb, "tr", "a-z", "A-Z")
	cmd.Stdin = strings.NewReader("through stdin\n")
	out, err = cmd.Output()
	fmt.Printf("tr: %q %v\n", out, err)

	fmt.Printf("false: %v\n", exec.Command(bb, "false").Run())
	fmt.Printf("missing: %v\n", exec.Command("/nonexistent/program").Run())

	c := exec.Command(bb, "sh", "-c", "echo to stderr >&2; exit 7")
	var stderr strings.Builder
	c.Stderr = &stderr
	err = c.Run()
	fmt.Printf("exit 7: %v code=%d stderr=%q\n", err, c.ProcessState.ExitCode(), stderr.String())

	// children started from several goroutines at once
	var wg sync.WaitGroup
	results := make([]string, 4)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			o, err := exec.Command(bb, "expr", fmt.Sprint(i), "*", "10").Output()
			results[i] = fmt.Sprintf("%s/%v", strings.TrimSpace(string(o)), err)
		}(i)
	}
	wg.Wait()
	fmt.Println("goroutines:", results)
}
