package web

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// Prometheus metrics at /metrics: verifications and routed calls (counts
// by outcome, durations), the calls waiting for a person, the open tabs,
// the store's readiness and the Go runtime; on a team's etcd, the
// store's latency and errors and the replica's etcd session. They are read with an admin's
// token, or from an address -metrics-allow names (a scraper's, without a
// token).

// metrics are this replica's.
type metrics struct {
	reg           *prometheus.Registry
	calls         *prometheus.CounterVec
	callDuration  *prometheus.HistogramVec
	verifications *prometheus.CounterVec
	verifyTime    *prometheus.HistogramVec

	mu   sync.Mutex
	seen map[string]bool // jobs counted (ended), bounded
}

// maxSeenJobs bounds the ended jobs remembered, so that each counts once.
const maxSeenJobs = 4096

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), seen: map[string]bool{},
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_calls_total",
			Help: "Routed calls (tools, resources, prompts), by decision and outcome."}, []string{"decision", "outcome"}),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchboard_call_duration_seconds",
			Help: "How long routed calls took, the wait for a person included, by outcome.", Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 12)}, []string{"outcome"}),
		verifications: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_verifications_total",
			Help: "Verifications that ended, by status."}, []string{"status"}),
		verifyTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchboard_verification_duration_seconds",
			Help: "How long verifications ran, by status.", Buckets: prometheus.ExponentialBuckets(0.025, 2.5, 10)}, []string{"status"}),
	}
	m.reg.MustRegister(m.calls, m.callDuration, m.verifications, m.verifyTime,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchboard_approvals_waiting",
			Help: "Calls waiting for a person, on every replica."}, func() float64 { return float64(len(s.approvals.List())) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchboard_sse_clients",
			Help: "Open dashboard tabs (live streams) on this replica."}, func() float64 { return float64(s.live.hub.Connections()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchboard_ready",
			Help: "1 when this replica is ready (see /readyz), else 0."}, func() float64 {
			if _, ok := s.ready(context.Background()); ok {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchboard_leader",
			Help: "1 when this replica leads."}, func() float64 {
			if s.deps.Verify.Leading() {
				return 1
			}
			return 0
		}),
	)
	// A team's replica: its store's latency and errors, its etcd session.
	if col, ok := s.deps.Cluster.(interface{ Collectors() []prometheus.Collector }); ok {
		m.reg.MustRegister(col.Collectors()...)
	}
	return m
}

// call counts a routed call's record.
func (m *metrics) call(c store.Call) {
	m.calls.WithLabelValues(c.Decision, c.Outcome).Inc()
	m.callDuration.WithLabelValues(c.Outcome).Observe(float64(c.DurationMS) / 1000)
}

// job counts a verification once, when it ends.
func (m *metrics) job(j discovery.Job) {
	if !j.Done() {
		return
	}
	m.mu.Lock()
	if m.seen[j.ID] {
		m.mu.Unlock()
		return
	}
	if len(m.seen) >= maxSeenJobs {
		clear(m.seen)
	}
	m.seen[j.ID] = true
	m.mu.Unlock()
	m.verifications.WithLabelValues(j.Status).Inc()
	if !j.StartedAt.IsZero() {
		m.verifyTime.WithLabelValues(j.Status).Observe(j.FinishedAt.Sub(j.StartedAt).Seconds())
	}
}

// handleMetrics serves GET /metrics to an allowed scrape address, or with
// an admin's bearer token.
func (s *Server) handleMetrics(c echo.Context) error {
	if !s.scrapeAllowed(c.Request().RemoteAddr) {
		scheme, token, _ := strings.Cut(c.Request().Header.Get(echo.HeaderAuthorization), " ")
		a, ok := s.tokenActor(c, strings.TrimSpace(token), "api")
		switch {
		case !strings.EqualFold(scheme, "Bearer") || !ok:
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
			return &apiError{Status: http.StatusUnauthorized, Message: "metrics need an admin's bearer token, or a scrape address -metrics-allow names"}
		case !a.Role.Allows(admin):
			return &apiError{Status: http.StatusForbidden, Message: "metrics need the admin role; you are " + roleOrNone(a.Role)}
		}
	}
	promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{Timeout: 10 * time.Second}).ServeHTTP(c.Response(), c.Request())
	return nil
}

// scrapeAllowed reports whether remote (host:port) is in -metrics-allow.
func (s *Server) scrapeAllowed(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	for _, p := range s.cfg.MetricsAllow {
		if p.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}
