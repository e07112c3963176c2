package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"time"
)

// signInPage is what -mode html serves: a page a proxy or an SSO gateway
// puts in front of a server, with markup and a control character that must
// never reach a person's screen unescaped.
const signInPage = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n" +
	"<body>\x1b[31m<script>alert('fixture')</script><h1>Please sign in to continue</h1></body></html>\n"

// hostileHTTPHandler returns the handler of a remote misbehaving mode, or
// nil for the modes that serve MCP. It answers every path, so it stands in
// for the whole server, event stream and message endpoint alike.
func hostileHTTPHandler(cfg config) http.Handler {
	switch cfg.mode {
	case modeHTTPStatus:
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if cfg.status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mcp-fixture"`)
			}
			http.Error(w, fmt.Sprintf("mcp-fixture: refused with %d (-mode http-status)", cfg.status), cfg.status)
		})
	case modeHTML:
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, signInPage)
		})
	case modeRedirect:
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			http.Redirect(w, r, cfg.redirectTo, http.StatusTemporaryRedirect)
		})
	case modeSSENoEndpoint:
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			stream(w, r, []byte(": keep-alive, but no endpoint event\n\n"), cfg.interval)
		})
	case modeEndlessBody:
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if r.Method == http.MethodGet {
				// The legacy SSE transport's event stream: one data line
				// that never ends.
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "event: endpoint\ndata: /message?pad=")
			} else {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"pad":"`)
			}
			unit := []byte("a")
			if cfg.interval == 0 {
				unit = bytes.Repeat(unit, 32<<10)
			}
			stream(w, r, unit, cfg.interval)
		})
	}
	return nil
}

// stream writes unit, flushed, every interval (or as fast as the client
// reads, for 0) until the client goes away or the server shuts down.
func stream(w http.ResponseWriter, r *http.Request, unit []byte, interval time.Duration) {
	flusher, _ := w.(http.Flusher)
	for {
		if _, err := w.Write(unit); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		if interval == 0 {
			if r.Context().Err() != nil {
				return
			}
			continue
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(interval):
		}
	}
}
