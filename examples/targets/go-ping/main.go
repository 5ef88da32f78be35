// Command go-ping is seed 001's Go target: a "ping" server written with the standard
// library's net/http or with gin, one framework per process so each can be pinned to its own
// core and measured alone. Both answer GET /ping with the same {"message":"pong"} (gin's
// quick-start), so one load compares the frameworks; net/http also keeps the seed's GET /bar.
//
//	go-ping -framework nethttp -listen 127.0.0.1:8080
//	go-ping -framework gin -listen 127.0.0.1:8081
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/gin-gonic/gin"
)

// netHTTP answers GET /ping with gin's body, written by hand, and GET /bar with the seed's
// plain-text greeting.
func netHTTP() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write([]byte(`{"message":"pong"}`))
	})
	mux.HandleFunc("/bar", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "Hello, %q", r.URL.Path)
	})
	return mux
}

// ginEngine answers GET /ping with {"message":"pong"}, gin's quick-start example; no
// logger middleware (a log line per request would measure the terminal, not gin).
func ginEngine() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	engine.Use(gin.Recovery())
	engine.GET("/ping", func(c *gin.Context) {
		c.JSON(http.StatusOK, gin.H{"message": "pong"})
	})
	return engine
}

func main() {
	framework := flag.String("framework", "nethttp", "nethttp or gin")
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	flag.Parse()
	var handler http.Handler
	switch *framework {
	case "nethttp":
		handler = netHTTP()
	case "gin":
		handler = ginEngine()
	default:
		fmt.Fprintf(os.Stderr, "go-ping: unknown -framework %q; fix: use nethttp or gin\n", *framework)
		os.Exit(2)
	}
	log.Printf("go-ping %s listening on %s", *framework, *listen)
	log.Fatal(http.ListenAndServe(*listen, handler))
}
