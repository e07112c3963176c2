package store_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

func TestInitialPolicy(t *testing.T) {
	tests := []struct {
		def         store.Policy
		annotations string
		want        store.Policy
		raised      bool
	}{
		// No hints: the spec's defaults (destructive, open world) apply.
		{store.PolicyAllow, ``, store.PolicyAsk, true},
		{store.PolicyAllow, `{}`, store.PolicyAsk, true},
		{store.PolicyAllow, `not json`, store.PolicyAsk, true},
		{store.PolicyAllow, `{"readOnlyHint":true}`, store.PolicyAsk, true},                          // still open world
		{store.PolicyAllow, `{"destructiveHint":false}`, store.PolicyAsk, true},                      // still open world
		{store.PolicyAllow, `{"openWorldHint":false}`, store.PolicyAsk, true},                        // still destructive
		{store.PolicyAllow, `{"destructiveHint":true,"openWorldHint":false}`, store.PolicyAsk, true}, // destructive
		{store.PolicyAllow, `{"readOnlyHint":true,"openWorldHint":false}`, store.PolicyAllow, false},
		{store.PolicyAllow, `{"destructiveHint":false,"openWorldHint":false}`, store.PolicyAllow, false},
		{store.PolicyAllow, `{"readOnlyHint":true,"destructiveHint":true,"openWorldHint":false}`, store.PolicyAllow, false}, // read-only wins
		// Never looser than the server's default.
		{store.PolicyAsk, `{"readOnlyHint":true,"openWorldHint":false}`, store.PolicyAsk, false},
		{store.PolicyDeny, `{"readOnlyHint":true,"openWorldHint":false}`, store.PolicyDeny, false},
		{store.PolicyDeny, `{"destructiveHint":true}`, store.PolicyDeny, false},
		{store.PolicyAsk, `{"destructiveHint":true}`, store.PolicyAsk, false},
	}
	for _, tt := range tests {
		got, reason := store.InitialPolicy(tt.def, json.RawMessage(tt.annotations))
		if got != tt.want {
			t.Errorf("store.InitialPolicy(%s, %s) = %s (%s); want %s", tt.def, tt.annotations, got, reason, tt.want)
		}
		if raised := reason != "the server's default policy"; raised != tt.raised {
			t.Errorf("store.InitialPolicy(%s, %s) reason = %q; want raised=%v", tt.def, tt.annotations, reason, tt.raised)
		}
	}
}

func TestFreshness(t *testing.T) {
	const ttl = 5 * time.Minute
	srv := storetest.StdioServer("x")
	ok := store.Discovery{Status: store.StatusSuccess, VerifiedAt: storetest.At(0), LastAttemptAt: storetest.At(0), ConfigHash: srv.ConfigHash()}
	failed := ok
	failed.Status, failed.LastAttemptAt, failed.Error = store.StatusTimeout, storetest.At(100), &store.VerifyError{Class: "timeout", Phase: "initializing"}
	edited := srv
	edited.Args, edited.UpdatedAt = []string{"other"}, storetest.At(50)
	short := srv
	short.TTLSeconds = 10

	tests := []struct {
		name string
		sum  store.Summary
		now  time.Time
		want store.Freshness
	}{
		{"never", store.Summary{srv, store.Discovery{Status: store.StatusNever}}, storetest.At(0), store.Freshness{State: store.FreshNever}},
		{"fresh", store.Summary{srv, ok}, storetest.At(299), store.Freshness{State: store.FreshFresh, VerifiedAt: storetest.At(0), Until: storetest.At(300)}},
		{"ttl", store.Summary{srv, ok}, storetest.At(300), store.Freshness{State: store.FreshStale, VerifiedAt: storetest.At(0), Since: storetest.At(300), Reason: store.StaleTTL}},
		{"own ttl", store.Summary{short, ok}, storetest.At(11), store.Freshness{State: store.FreshStale, VerifiedAt: storetest.At(0), Since: storetest.At(10), Reason: store.StaleTTL}},
		{"config", store.Summary{edited, ok}, storetest.At(60), store.Freshness{State: store.FreshStale, VerifiedAt: storetest.At(0), Since: storetest.At(50), Reason: store.StaleConfig}},
		{"failed", store.Summary{srv, failed}, storetest.At(120), store.Freshness{State: store.FreshFailed, VerifiedAt: storetest.At(0), Since: storetest.At(100), Error: failed.Error}},
		{"running keeps", store.Summary{srv, store.Discovery{Status: store.StatusRunning, VerifiedAt: storetest.At(0), ConfigHash: srv.ConfigHash()}}, storetest.At(1), store.Freshness{State: store.FreshFresh, VerifiedAt: storetest.At(0), Until: storetest.At(300)}},
	}
	for _, tt := range tests {
		if got := tt.sum.Freshness(ttl, tt.now); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Freshness = %+v; want %+v", tt.name, got, tt.want)
		}
	}
	remote := store.Server{Transport: store.TransportHTTP}
	on, off := true, false
	if !remote.AutoRefreshOn() || srv.AutoRefreshOn() {
		t.Errorf("AutoRefreshOn defaults: remote %v, stdio %v; want true, false", remote.AutoRefreshOn(), srv.AutoRefreshOn())
	}
	remote.AutoRefresh, srv.AutoRefresh = &off, &on
	if remote.AutoRefreshOn() || !srv.AutoRefreshOn() {
		t.Errorf("AutoRefreshOn set: remote %v, stdio %v; want false, true", remote.AutoRefreshOn(), srv.AutoRefreshOn())
	}
}
