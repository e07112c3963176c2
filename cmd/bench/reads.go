//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"time"
)

// readFigures measures what agents and people read: the catalog and one
// server's tools over loopback (against the same bytes served from memory
// by a bare net/http server), a 304 for an unchanged catalog, and the two
// pages, timed inside the server.
func readFigures(ctx context.Context, cfg *config) ([]figure, error) {
	cat, err := cfg.seededCatalog(ctx)
	if err != nil {
		return nil, err
	}
	a, err := startApp(cat.path, 2)
	if err != nil {
		return nil, err
	}
	defer a.close()
	if err := a.login(ctx); err != nil {
		return nil, err
	}
	var figs []figure
	add := func(f figure, err error) error {
		if err == nil {
			figs = append(figs, f)
		}
		return err
	}
	label := fmt.Sprintf("%d servers × %d tools", cfg.CatalogServers, cfg.ToolsPerServer)
	if err := add(loopbackFigure(ctx, a, cfg.ReadRuns, "/api/v1/tools", "GET /api/v1/tools, "+label, "≤ 1.5×",
		func(f *figure) bool { return f.Ratio <= 1.5 })); err != nil {
		return figs, err
	}
	if err := add(notModifiedFigure(a, cfg.ReadRuns*10)); err != nil {
		return figs, err
	}
	if err := add(loopbackFigure(ctx, a, cfg.ReadRuns, "/api/v1/servers/srv-0/tools",
		fmt.Sprintf("GET one server's tools (%d), p50", cfg.ToolsPerServer), "p50 ≤ 1 ms",
		func(f *figure) bool { return f.Value <= 1 })); err != nil {
		return figs, err
	}
	if err := add(pageFigure(a, cfg.ReadRuns, "/", fmt.Sprintf("Servers page, %d servers, server time p50", cfg.CatalogServers), 5)); err != nil {
		return figs, err
	}
	f, err := detailFigure(ctx, cfg)
	return figs, add(f, err)
}

// loopbackFigure times GET path end to end over loopback (keep-alive, body
// read whole) against a plain net/http server answering the same bytes
// from memory, alternating the two. The value is the median.
func loopbackFigure(ctx context.Context, a *app, runs int, path, name, target string, pass func(*figure) bool) (figure, error) {
	get := func(c *http.Client, u string) (time.Duration, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+benchToken)
		t0 := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return 0, nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %d", u, resp.StatusCode)
		}
		return d, body, err
	}
	_, body, err := get(a.client, a.base+path) // also renders the cache
	if err != nil {
		return figure{}, err
	}
	base, closeBase, err := serveBytes(body)
	if err != nil {
		return figure{}, err
	}
	defer closeBase()
	baseClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer baseClient.CloseIdleConnections()

	var ours, bare samples
	for i := -1; i < runs; i++ {
		d1, _, err := get(a.client, a.base+path)
		if err != nil {
			return figure{}, err
		}
		d2, got, err := get(baseClient, base)
		if err != nil {
			return figure{}, err
		}
		if len(got) != len(body) {
			return figure{}, fmt.Errorf("the baseline served %d bytes, not %d", len(got), len(body))
		}
		if i >= 0 {
			ours, bare = append(ours, d1), append(bare, d2)
		}
	}
	f := figure{
		Name: name, Unit: "ms", Value: ms(ours.median()),
		Baseline: "same bytes from memory", BaseVal: ms(bare.median()), Target: target,
	}
	f.Ratio = f.Value / f.BaseVal
	f.Pass = pass(&f)
	f.Note = fmt.Sprintf("%d KiB; median of %d; p99 %.2f ms", len(body)/1024, runs, ms(ours.quantile(0.99)))
	return f, nil
}

// serveBytes starts the baseline: net/http answering body from memory.
func serveBytes(body []byte) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/", func() { srv.Close() }, nil
}

// serverTime times requests handled in process (no network): the
// server's own time, as a person's page load or an agent's poll costs it.
func serverTime(a *app, runs int, req func() *http.Request, want int) (samples, error) {
	var s samples
	for i := -1; i < runs; i++ {
		r := req()
		rec := httptest.NewRecorder()
		t0 := time.Now()
		a.web.ServeHTTP(rec, r)
		d := time.Since(t0)
		if rec.Code != want {
			return nil, fmt.Errorf("%s %s: %d, want %d", r.Method, r.URL.Path, rec.Code, want)
		}
		if i >= 0 {
			s = append(s, d)
		}
	}
	return s, nil
}

// notModifiedFigure: an agent polling an unchanged catalog with
// If-None-Match gets a 304 without the catalog being read or rendered.
func notModifiedFigure(a *app, runs int) (figure, error) {
	rec := httptest.NewRecorder()
	a.web.ServeHTTP(rec, a.apiRequest("/api/v1/tools"))
	etag := rec.Header().Get("ETag")
	if rec.Code != http.StatusOK || etag == "" {
		return figure{}, fmt.Errorf("GET /api/v1/tools: %d, ETag %q", rec.Code, etag)
	}
	s, err := serverTime(a, runs, func() *http.Request {
		r := a.apiRequest("/api/v1/tools")
		r.Header.Set("If-None-Match", etag)
		return r
	}, http.StatusNotModified)
	if err != nil {
		return figure{}, err
	}
	f := figure{Name: "GET /api/v1/tools with If-None-Match → 304, server time p50", Unit: "ms",
		Value: ms(s.median()), Target: "≤ 100 µs"}
	f.Pass = f.Value <= 0.1
	f.Note = fmt.Sprintf("median of %d; p99 %.0f µs", runs, ms(s.quantile(0.99))*1000)
	return f, nil
}

// apiRequest is an authenticated API GET for in-process serving.
func (a *app) apiRequest(path string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, a.base+path, nil)
	r.Header.Set("Authorization", "Bearer "+benchToken)
	return r
}

// pageRequest is a browser GET with the session cookie of a.client.
func (a *app) pageRequest(path string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, a.base+path, nil)
	u, _ := url.Parse(a.base)
	for _, c := range a.client.Jar.Cookies(u) {
		r.AddCookie(c)
	}
	return r
}

// pageFigure times a full page render in process; target is its p50 in ms.
func pageFigure(a *app, runs int, path, name string, targetMS float64) (figure, error) {
	s, err := serverTime(a, runs, func() *http.Request { return a.pageRequest(path) }, http.StatusOK)
	if err != nil {
		return figure{}, err
	}
	f := figure{Name: name, Unit: "ms", Value: ms(s.median()), Target: fmt.Sprintf("p50 ≤ %g ms", targetMS)}
	f.Pass = f.Value <= targetMS
	f.Note = fmt.Sprintf("median of %d; p99 %.1f ms", runs, ms(s.quantile(0.99)))
	return f, nil
}

// detailFigure times the detail page of a server with DetailTools tools,
// verified from the fixture into a database of its own.
func detailFigure(ctx context.Context, cfg *config) (figure, error) {
	a, err := startFreshApp(cfg, "detail", 2)
	if err != nil {
		return figure{}, err
	}
	defer a.close()
	sc := cfg.bins.fixtureCmd("-tools", strconv.Itoa(cfg.DetailTools), "-page-size", "100")
	if err := a.addServer(ctx, "big", sc); err != nil {
		return figure{}, err
	}
	if _, err := a.verifyAll(ctx, []string{"big"}); err != nil {
		return figure{}, err
	}
	return pageFigure(a, cfg.ReadRuns, "/servers/big", fmt.Sprintf("Detail page, %d tools, server time p50", cfg.DetailTools), 20)
}
