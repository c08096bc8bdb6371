// net/http server and client in one program over loopback TCP, plus net.Dial errors, a
// Unix-domain listener and IPv6: what Go's own net/http tests do, run under armada's
// in-memory network and under qemu-aarch64 (the host's loopback). Prints no ports.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s", r.Method, r.URL.Query().Get("name"))
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Len", fmt.Sprint(len(b)))
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(strings.ToUpper(string(b))))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	base := "http://" + ln.Addr().String()

	resp, err := http.Get(base + "/hello?name=armada")
	if err != nil {
		fmt.Println("get:", err)
		os.Exit(1)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("GET:", resp.StatusCode, string(body))

	resp, err = http.Post(base+"/echo", "text/plain", strings.NewReader("posted body"))
	if err != nil {
		fmt.Println("post:", err)
		os.Exit(1)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("POST:", resp.StatusCode, resp.Header.Get("X-Len"), string(body))

	resp, _ = http.Get(base + "/missing")
	resp.Body.Close()
	fmt.Println("missing:", resp.StatusCode)

	// 20 clients at once (keep-alive connections, a goroutine each)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := []string{}
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := http.Get(fmt.Sprintf("%s/hello?name=c%02d", base, i))
			if err != nil {
				mu.Lock()
				got = append(got, "error: "+err.Error())
				mu.Unlock()
				return
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			mu.Lock()
			got = append(got, string(b))
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	sort.Strings(got)
	fmt.Println("concurrent:", len(got), got[0], got[19])

	// a closed port
	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l2.Addr().String()
	l2.Close()
	_, err = net.Dial("tcp", addr)
	fmt.Println("dial a closed port: refused:", errors.Is(err, syscall.ECONNREFUSED))

	// IPv6 loopback, raw TCP
	l6, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		fmt.Println("listen tcp6:", err)
		os.Exit(1)
	}
	go func() {
		c, err := l6.Accept()
		if err != nil {
			return
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Write([]byte("v6 echo: " + line))
		c.Close()
	}()
	c6, err := net.Dial("tcp6", l6.Addr().String())
	if err != nil {
		fmt.Println("dial tcp6:", err)
		os.Exit(1)
	}
	c6.Write([]byte("ping\n"))
	reply, _ := io.ReadAll(c6)
	fmt.Print(string(reply))
	c6.Close()

	// a Unix-domain listener in a temporary directory
	dir, _ := os.MkdirTemp("", "nethttp")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sock")
	lu, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("listen unix:", err)
		os.Exit(1)
	}
	go http.Serve(lu, mux)
	client := &http.Client{Transport: &http.Transport{
		Dial: func(_, _ string) (net.Conn, error) { return net.Dial("unix", path) },
	}}
	resp, err = client.Get("http://unix/hello?name=unix")
	if err != nil {
		fmt.Println("unix get:", err)
		os.Exit(1)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("over a unix socket:", resp.StatusCode, string(body))
	lu.Close()
	srv.Close()
	fmt.Println("done")
}
