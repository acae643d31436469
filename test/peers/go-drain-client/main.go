// A real Go client for the drain probe's comparison (test/integration/drain-go-client.test.ts):
// N sequential GETs over HTTP/1.1, each body left unread behind `defer resp.Body.Close()`, as
// the Go connection-reuse article's benchmark does; httptrace's GotConn counts the connections
// the transport opened. Prints one JSON object. Standard library only.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os"
	"runtime"
	"time"
)

type result struct {
	GoVersion   string `json:"goVersion"`
	Requests    int    `json:"requests"`
	Connections int    `json:"connections"`
	Statuses    []int  `json:"statuses"`
}

func main() {
	url := flag.String("url", "", "the URL to GET")
	requests := flag.Int("requests", 100, "sequential GETs")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "usage: go-drain-client -url URL [-requests N]")
		os.Exit(2)
	}
	// HTTP/1.1 only, as the article's benchmark (GODEBUG=http2client=0); no proxy from the environment.
	transport := &http.Transport{ForceAttemptHTTP2: false, Proxy: nil}
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	out := result{GoVersion: runtime.Version(), Requests: *requests, Statuses: []int{}}
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if !info.Reused {
				out.Connections++
			}
		},
	}
	for i := 0; i < *requests; i++ {
		status, err := getStatus(client, *url, trace)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out.Statuses = append(out.Statuses, status)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}

// getStatus is the article's function: the status is all it wants; the body is closed unread.
func getStatus(client *http.Client, url string, trace *httptrace.ClientTrace) (int, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}
