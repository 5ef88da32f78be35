// grpc-go: a gRPC server from the Go module proxy for loadbench's gRPC tests (issue 41). It
// serves grpc-go's own health service (grpc.health.v1.Health), so no code is generated: Check
// of a known service answers SERVING (status OK), of an unknown one the status NOT_FOUND. A
// unary interceptor counts the calls by their status code; on SIGTERM or SIGINT the server
// stops (letting calls in flight finish) and prints the counts as one JSON object on stdout,
// which the tests compare with loadbench's own per-status counts.
//
// Flags: -listen ADDR (default 127.0.0.1:0); the first line on stdout is "listening ADDR" with
// the port it got. -serving NAME (repeatable via commas) are the services Check knows.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// counts holds the calls answered, by status code number ("0" for OK, "5" for NOT_FOUND, ...).
type counts struct {
	mu sync.Mutex
	by map[string]uint64
}

func (c *counts) interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	code := strconv.Itoa(int(status.Code(err)))
	c.mu.Lock()
	c.by[code]++
	c.mu.Unlock()
	return resp, err
}

func (c *counts) json() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _ := json.Marshal(c.by)
	return string(b)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	serving := flag.String("serving", "loadbench.ok", "comma-separated services Check answers SERVING")
	flag.Parse()

	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	c := &counts{by: map[string]uint64{}}
	srv := grpc.NewServer(grpc.UnaryInterceptor(c.interceptor))
	hs := health.NewServer()
	for _, name := range strings.Split(*serving, ",") {
		hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(srv, hs)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		srv.GracefulStop()
	}()
	fmt.Printf("listening %s\n", lis.Addr())
	if err := srv.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
	}
	fmt.Println(c.json())
}
