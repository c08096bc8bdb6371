// The smallest Go program: the runtime starts its threads (sysmon, GC workers) even so.
package main

import "fmt"

func main() {
	fmt.Println("Hello from Go!")
}
