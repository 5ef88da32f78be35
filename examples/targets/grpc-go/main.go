// grpc-go: a gRPC server from the Go module proxy for loadbench's gRPC tests (issue 41). It
// serves grpc-go's own health service (grpc.health.v1.Health), so no code is generated: Check
// of a known service answers SERVING (status OK), of an unknown one the status NOT_FOUND. A
// unary interceptor counts the calls by their status code; on SIGTERM or SIGINT the server
// stops (letting calls in flight finish) and prints the counts as one JSON object on stdout,
// which the tests compare with loadbench's own per-status counts.
//
// It also serves loadbench.test.Stream (crates/cli/tests/fixtures/grpc/stream.proto), a
// server-streaming service registered by hand from the well-known wrapper types, so again no
// code is generated: Count gets a UInt32Value N and sends N StringValue messages ("1" to "N"),
// with the call's x-delay-ms between two of them.
// A stream interceptor counts those calls by status too, and the messages sent; the line
// before the counts on stop is "messages N".
//
// A unary call whose metadata has x-delay-ms: N waits N milliseconds before the handler runs; when
// the call's deadline (its grpc-timeout) leaves less than that, it answers DEADLINE_EXCEEDED at
// once instead, as a server that propagates deadlines does (so the tests see that the
// deadline loadbench sends arrived, and what it was).
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
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// counts holds the calls answered, by status code number ("0" for OK, "5" for NOT_FOUND, ...),
// and the messages the streaming calls sent.
type counts struct {
	mu       sync.Mutex
	by       map[string]uint64
	messages atomic.Uint64
	// Reflection calls (not counted in by).
	reflections uint64
}

func (c *counts) add(err error) {
	code := strconv.Itoa(int(status.Code(err)))
	c.mu.Lock()
	c.by[code]++
	c.mu.Unlock()
}

// sending counts a stream's messages as they are sent.
type sending struct {
	grpc.ServerStream
	sent *atomic.Uint64
}

func (s sending) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	if err == nil {
		s.sent.Add(1)
	}
	return err
}

func (c *counts) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if strings.HasPrefix(info.FullMethod, "/grpc.reflection.") {
		// The reflection a client asks before its load is not counted as a call of the load.
		c.mu.Lock()
		c.reflections++
		c.mu.Unlock()
		return handler(srv, ss)
	}
	err := handler(srv, sending{ss, &c.messages})
	c.add(err)
	return err
}

// streamService is loadbench.test.Stream written by hand: one server-streaming method.
var streamService = grpc.ServiceDesc{
	ServiceName: "loadbench.test.Stream",
	HandlerType: (*any)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "Count",
		Handler:       count,
		ServerStreams: true,
	}},
	Metadata: "stream.proto",
}

// count sends as many StringValue messages as the UInt32Value it got says, waiting the call's
// x-delay-ms (if any) between two messages.
func count(_ any, stream grpc.ServerStream) error {
	var n wrapperspb.UInt32Value
	if err := stream.RecvMsg(&n); err != nil {
		return err
	}
	for i := uint32(1); i <= n.GetValue(); i++ {
		if i > 1 {
			if err := delay(stream.Context()); err != nil {
				return err
			}
		}
		if err := stream.SendMsg(wrapperspb.String(strconv.FormatUint(uint64(i), 10))); err != nil {
			return err
		}
	}
	return nil
}

func (c *counts) interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	var resp any
	err := delay(ctx)
	if err == nil {
		resp, err = handler(ctx, req)
	}
	c.add(err)
	return resp, err
}

// delay waits the call's x-delay-ms, or answers DEADLINE_EXCEEDED at once when its deadline
// comes sooner; a malformed value is INVALID_ARGUMENT.
func delay(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("x-delay-ms")
	if len(vals) == 0 {
		return nil
	}
	ms, err := strconv.Atoi(vals[0])
	if err != nil || ms < 0 {
		return status.Errorf(codes.InvalidArgument, "x-delay-ms: %q is no number of milliseconds", vals[0])
	}
	wait := time.Duration(ms) * time.Millisecond
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
		return status.Errorf(codes.DeadlineExceeded, "x-delay-ms %d outlasts the deadline (%s left)", ms, time.Until(deadline).Round(time.Millisecond))
	}
	select {
	case <-time.After(wait):
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
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
	srv := grpc.NewServer(grpc.UnaryInterceptor(c.interceptor), grpc.StreamInterceptor(c.streamInterceptor))
	srv.RegisterService(&streamService, struct{}{})
	hs := health.NewServer()
	for _, name := range strings.Split(*serving, ",") {
		hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(srv, hs)
	// Server reflection (v1 and v1alpha): a client can call Health without its .proto.
	reflection.Register(srv)

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
	fmt.Printf("messages %d\n", c.messages.Load())
	c.mu.Lock()
	fmt.Printf("reflections %d\n", c.reflections)
	c.mu.Unlock()
	fmt.Println(c.json())
}
