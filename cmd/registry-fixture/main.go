// Command registry-fixture serves an MCP Registry of the tests' own (see
// internal/registry/registrytest) on an address, for the browser tests
// and demos: the seed's server.json documents, padded with generated
// servers past one page.
//
//	registry-fixture [-addr 127.0.0.1:7499] [-filler 130]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/switchboard-dev/switchboard/internal/registry/registrytest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "registry-fixture:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:7499", "address to serve the registry on")
	filler := flag.Int("filler", 130, "generated servers besides the seed's")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	h := registrytest.Handler(append(registrytest.Seed(), registrytest.Filler(*filler)...))
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Printf("registry-fixture serving http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
