package etcd

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-dev/switchboard/store"
)

// storeMetrics are how this replica's requests to etcd fare: their
// latency, and their errors by kind.
type storeMetrics struct {
	took   *prometheus.HistogramVec
	errors *prometheus.CounterVec
}

func newStoreMetrics() storeMetrics {
	return storeMetrics{
		took: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchboard_store_request_duration_seconds",
			Help:    "How long the store's reads and writes on etcd took (a write's retries on a conflict included), by operation.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12)}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_store_errors_total",
			Help: "The store's reads and writes on etcd that failed, by operation and kind: unavailable (etcd out of reach or out of time), " +
				"unknown_outcome (a commit not confirmed in time), conflict (too many concurrent changes), fenced (a claim lost)."},
			[]string{"op", "kind"}),
	}
}

// observe records an operation ("read" or "write") that began at start
// and ended with err. The errors of the caller's own (a server not
// found, a policy refused) are not the store's.
func (m storeMetrics) observe(op string, start time.Time, err error) {
	m.took.WithLabelValues(op).Observe(time.Since(start).Seconds())
	var kind string
	switch {
	case err == nil:
		return
	case errors.Is(err, store.ErrOutcomeUnknown):
		kind = "unknown_outcome"
	case errors.Is(err, ErrUnavailable):
		kind = "unavailable"
	case errors.Is(err, errConflict):
		kind = "conflict"
	case errors.Is(err, store.ErrFenced):
		kind = "fenced"
	default:
		return
	}
	m.errors.WithLabelValues(op, kind).Inc()
}

// Collectors are the Prometheus collectors of this replica's store and
// its etcd session: the store's latency and errors, whether the replica
// holds a live session (and so can claim and lead), and how often it
// gave its session up before etcd could expire it.
func (c *Coordinator) Collectors() []prometheus.Collector {
	return []prometheus.Collector{c.db.metrics.took, c.db.metrics.errors, c.lapses,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchboard_etcd_session",
			Help: "1 while this replica holds a live etcd session (its lease renewed in time), else 0."}, func() float64 {
			c.mu.Lock()
			s := c.session
			c.mu.Unlock()
			if s == nil {
				return 0
			}
			select {
			case <-s.Done():
				return 0
			default:
				return 1
			}
		}),
	}
}
