package web_test

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
)

// metricValue is the value of the sample of metrics text whose name and
// labels are exactly series (-1 if absent).
func metricValue(text, series string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+-]+)$`).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// /metrics counts verifications and routed calls by outcome and shows
// the calls waiting and the replica's readiness; an admin's token reads
// it, a viewer's does not, a scrape address -metrics-allow names does
// without a token (issue 38).
func TestMetrics(t *testing.T) {
	e := newEnv(t, func(c *webConfig) { c.MetricsAllow = []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")} })
	e.verifyFixture("fx", "-tools", "2")
	e.setPolicy("fx", "tool_000", "allow")
	e.setPolicy("fx", "tool_001", "deny")
	srv, _ := e.liveServer()
	agent := mcptest.Connect(t, srv.URL, testMCPToken)
	if err := mcptest.Refused(agent.Call("fx__tool_000", map[string]any{})); err != nil {
		t.Fatal(err)
	}
	_ = mcptest.Refused(agent.Call("fx__tool_001", map[string]any{}))
	e.waitCalls(2)

	rec := e.api(http.MethodGet, "/metrics", nil)
	wantStatus(t, rec, http.StatusOK)
	text := rec.Body.String()
	for series, want := range map[string]float64{
		`switchboard_verifications_total{status="success"}`:            1,
		`switchboard_calls_total{decision="allowed",outcome="ok"}`:     1,
		`switchboard_calls_total{decision="denied",outcome="refused"}`: 1,
		`switchboard_approvals_waiting`:                                0,
		`switchboard_ready`:                                            1,
		`switchboard_leader`:                                           1,
	} {
		if got := metricValue(text, series); got != want {
			t.Errorf("%s = %v; want %v", series, got, want)
		}
	}
	if !strings.Contains(text, "switchboard_call_duration_seconds_bucket") || !strings.Contains(text, "go_goroutines") {
		t.Errorf("no call durations or runtime metrics:\n%.2000s", text)
	}

	rec = e.api(http.MethodPost, "/api/v1/users", map[string]any{"email": "vic@example.com", "role": "viewer"})
	var made struct {
		Token string `json:"token"`
	}
	json.Unmarshal(rec.Body.Bytes(), &made)
	e.secrets = append(e.secrets, made.Token)
	wantStatus(t, e.apiWith(made.Token, http.MethodGet, "/metrics", ""), http.StatusForbidden)
	wantStatus(t, e.serve(newRequest(http.MethodGet, "/metrics", nil)), http.StatusUnauthorized)
	scrape := newRequest(http.MethodGet, "/metrics", nil)
	scrape.RemoteAddr = "198.51.100.7:40000"
	wantStatus(t, e.serve(scrape), http.StatusOK)
}
