package verify

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// Bounds of the wait before a lost watch reconnects.
const (
	watchRetryMin = time.Second
	watchRetryMax = 5 * time.Minute
	// watchHealthy is how long a session must have lasted for the pause
	// before the next one to start over from watchRetryMin.
	watchHealthy = time.Minute
)

// watches holds a session to every server with auto-refresh on that
// declared tools.listChanged when it was last verified, so that its
// notifications/tools/list_changed, and a new serverInfo.version when the
// session (re)connects, re-verify it. A watch is keyed by the server's
// configuration: an edit ends it and starts another.
type watches struct {
	deps watchDeps
	mu   sync.Mutex
	m    map[string]*watch // by server id
	wg   sync.WaitGroup
}

// watchDeps is what the watches need from the rest of the application.
type watchDeps struct {
	// Watch holds a session to srv until ctx ends (discovery's Watch, with
	// the server's target and settings), telling onEvent what it hears.
	Watch func(ctx context.Context, srv store.Server, onEvent func(discovery.WatchEvent)) error
	// Summary reads a server; Verify queues a verification of it.
	Summary func(ctx context.Context, id string) (store.Summary, error)
	Verify  func(srv store.Server, trigger string)
	// Publish shows a server's state again (its watch changed).
	Publish func(id string)
}

// newWatches returns watches holding none yet (see Reconcile).
func newWatches(deps watchDeps) *watches { return &watches{deps: deps, m: map[string]*watch{}} }

type watch struct {
	configHash string
	cancel     context.CancelFunc
	// connected and since are what the API shows.
	connected bool
	since     time.Time
	lastError string
}

// WatchState is a server's watch: whether its session is connected, and
// since when it is connected, or not and why.
type WatchState struct {
	Connected bool
	Since     time.Time
	LastError string
}

// State is the server's watch (nil if it is not watched).
func (ws *watches) State(id string) *WatchState {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.m[id]
	if w == nil {
		return nil
	}
	return &WatchState{Connected: w.connected, Since: w.since, LastError: w.lastError}
}

// wanted reports whether a server should be watched.
func wanted(sum store.Summary) bool {
	if !Verifiable(sum.Server) || !sum.Server.AutoRefreshOn() || sum.Discovery.VerifiedAt.IsZero() {
		return false
	}
	if sum.Discovery.Status == store.StatusSignIn {
		return false // it would be refused until a person signs in
	}
	var caps struct {
		Tools *struct {
			ListChanged bool `json:"listChanged"`
		} `json:"tools"`
	}
	if json.Unmarshal(sum.Discovery.Capabilities, &caps) != nil || caps.Tools == nil {
		return false
	}
	return caps.Tools.ListChanged
}

// Reconcile starts the watches that are wanted and stops the others.
func (ws *watches) Reconcile(sums []store.Summary) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	want := map[string]store.Summary{}
	for _, sum := range sums {
		if wanted(sum) {
			want[sum.Server.ID] = sum
		}
	}
	for id, w := range ws.m {
		if sum, ok := want[id]; !ok || sum.Server.ConfigHash() != w.configHash {
			w.cancel()
			delete(ws.m, id)
		}
	}
	for id, sum := range want {
		if _, ok := ws.m[id]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		w := &watch{configHash: sum.Server.ConfigHash(), cancel: cancel}
		ws.m[id] = w
		ws.wg.Add(1)
		go func() {
			defer ws.wg.Done()
			ws.run(ctx, w, sum.Server)
		}()
	}
}

// Close ends every watch and waits for them (and their processes).
func (ws *watches) Close() {
	ws.mu.Lock()
	for id, w := range ws.m {
		w.cancel()
		delete(ws.m, id)
	}
	ws.mu.Unlock()
	ws.wg.Wait()
}

// update changes a watch's state and shows it.
func (ws *watches) update(w *watch, id string, fn func(*watch)) {
	ws.mu.Lock()
	fn(w)
	ws.mu.Unlock()
	ws.deps.Publish(id)
}

// run holds the watch until ctx ends, reconnecting with a growing pause.
func (ws *watches) run(ctx context.Context, w *watch, srv store.Server) {
	retry := watchRetryMin
	for ctx.Err() == nil {
		began := time.Now()
		err := ws.deps.Watch(ctx, srv, func(ev discovery.WatchEvent) {
			switch ev.Kind {
			case discovery.WatchConnected:
				ws.update(w, srv.ID, func(w *watch) { w.connected, w.since, w.lastError = true, time.Now(), "" })
				sum, err := ws.deps.Summary(ctx, srv.ID)
				if err == nil && !sum.Discovery.VerifiedAt.IsZero() && ev.ServerVersion != sum.Discovery.ServerVersion {
					ws.deps.Verify(srv, store.TriggerVersion)
				}
			case discovery.WatchToolsChanged:
				ws.deps.Verify(srv, store.TriggerListChanged)
			}
		})
		if ctx.Err() != nil {
			return
		}
		msg := "the session ended"
		if err != nil {
			msg = err.Error()
		}
		ws.update(w, srv.ID, func(w *watch) {
			if w.connected || w.since.IsZero() { // since when it is unreachable
				w.since = time.Now()
			}
			w.connected, w.lastError = false, msg
		})
		// A session that lasted a while starts the pauses over; one that
		// ended soon after connecting (a flood, a crash) keeps growing them.
		if time.Since(began) > watchHealthy {
			retry = watchRetryMin
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
		retry = min(2*retry, watchRetryMax)
	}
}
