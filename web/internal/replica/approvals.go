package replica

import (
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/cluster"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/gateway"
)

// A call waits for a person on the replica that routes it; the person may
// be on any replica's tab. Each replica tells the others, as a cluster
// event, the calls waiting on it and how many can answer there (its tabs,
// a program reading the approvals), whenever that changes and every
// heartbeat; every replica shows every replica's cards, and counts every
// replica's approvers before it refuses a call nobody can answer. An
// answer to another replica's card goes to that replica as an event.

// Topics of the approvals' events.
const (
	approvalsTopic = "approvals"
	decideTopic    = "decide"
)

// Timing of the approvals' events: a replica tells its state every
// heartbeat, and one not heard of for stale counts no more.
const (
	heartbeat = 5 * time.Second
	stale     = 3 * heartbeat
)

// ApprovalDeps is what the approvals need of this replica.
type ApprovalDeps struct {
	// Local is the calls waiting here; Decide answers one of them
	// (gateway.ErrApprovalGone if it is not waiting here).
	Local  func() []views.Approval
	Decide func(id string, a gateway.Answer, by, reason string) error
	// Approvers is how many can answer here (see web's approvers).
	Approvers func() int
	// Leading and Revision are this replica's leadership and the store
	// revision it has seen, told with its state (see Replicas); nil:
	// not told.
	Leading  func() bool
	Revision func() string
	// Changed is called when another replica's cards changed.
	Changed func()
	Log     *slog.Logger
}

// Approvals is the calls waiting for a person on every replica.
type Approvals struct {
	c    cluster.Cluster
	deps ApprovalDeps

	mu     sync.Mutex
	remote map[string]replicaState // by replica id

	cancel    []func()
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// replicaState is what a replica last told of itself.
type replicaState struct {
	Replica   string           `json:"replica"`
	Approvals []views.Approval `json:"approvals"`
	Approvers int              `json:"approvers"`
	Leader    bool             `json:"leader,omitempty"`
	Revision  string           `json:"revision,omitempty"`
	at        time.Time
}

// Replica is a replica as this one last heard of it.
type Replica struct {
	ID       string    `json:"id"`
	Self     bool      `json:"self,omitempty"`
	Leader   bool      `json:"leader"`
	Revision string    `json:"revision,omitempty"`
	LastSeen time.Time `json:"last_seen"`
	// Waiting is how many calls wait for a person there.
	Waiting int `json:"waiting"`
}

// Replicas is this replica and those heard of within the last three
// heartbeats (15 s): who leads, and the store revision each has seen.
func (a *Approvals) Replicas() []Replica {
	self := Replica{ID: a.c.ID(), Self: true, LastSeen: time.Now().UTC(), Waiting: len(a.deps.Local())}
	if a.deps.Leading != nil {
		self.Leader = a.deps.Leading()
	}
	if a.deps.Revision != nil {
		self.Revision = a.deps.Revision()
	}
	out := []Replica{self}
	for _, st := range a.fresh() {
		out = append(out, Replica{ID: st.Replica, Leader: st.Leader, Revision: st.Revision, LastSeen: st.at.UTC(), Waiting: len(st.Approvals)})
	}
	sort.SliceStable(out[1:], func(i, j int) bool { return out[1+i].ID < out[1+j].ID })
	return out
}

// decision is an answer to another replica's card.
type decision struct {
	ID     string         `json:"id"`
	Answer gateway.Answer `json:"answer"`
	By     string         `json:"by"`
	Reason string         `json:"reason"`
}

// NewApprovals starts telling the other replicas of this one's calls and
// hearing of theirs; Close stops it.
func NewApprovals(c cluster.Cluster, deps ApprovalDeps) *Approvals {
	a := &Approvals{c: c, deps: deps, remote: map[string]replicaState{}, stop: make(chan struct{}), done: make(chan struct{})}
	a.cancel = append(a.cancel, c.Subscribe(approvalsTopic, a.heardState), c.Subscribe(decideTopic, a.heardDecision))
	go a.beat()
	return a
}

// Close stops the heartbeat and the hearing; it may be called more than
// once.
func (a *Approvals) Close() {
	a.closeOnce.Do(func() {
		close(a.stop)
		for _, cancel := range a.cancel {
			cancel()
		}
	})
	<-a.done
}

// beat tells the others this replica's state every heartbeat.
func (a *Approvals) beat() {
	defer close(a.done)
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			a.tell()
		}
	}
}

// LocalChanged is called when a call here starts or stops waiting.
func (a *Approvals) LocalChanged() { a.tell() }

// tell publishes this replica's state.
func (a *Approvals) tell() {
	st := replicaState{Replica: a.c.ID(), Approvals: a.deps.Local(), Approvers: a.deps.Approvers()}
	if a.deps.Leading != nil {
		st.Leader = a.deps.Leading()
	}
	if a.deps.Revision != nil {
		st.Revision = a.deps.Revision()
	}
	b, err := json.Marshal(st)
	if err == nil {
		err = a.c.Publish(approvalsTopic, b)
	}
	if err != nil {
		a.deps.Log.Warn("tell the other replicas of the calls waiting here", "err", err)
	}
}

func (a *Approvals) heardState(data []byte) {
	var st replicaState
	if err := json.Unmarshal(data, &st); err != nil || st.Replica == "" {
		a.deps.Log.Warn("an undecodable approvals event from another replica", "err", err)
		return
	}
	st.at = time.Now()
	a.mu.Lock()
	old, had := a.remote[st.Replica]
	a.remote[st.Replica] = st
	a.mu.Unlock()
	if !had || !sameCards(old.Approvals, st.Approvals) {
		a.deps.Changed()
	}
}

func sameCards(x, y []views.Approval) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i].ID != y[i].ID || x[i].InClient != y[i].InClient {
			return false
		}
	}
	return true
}

func (a *Approvals) heardDecision(data []byte) {
	var d decision
	if err := json.Unmarshal(data, &d); err != nil {
		return
	}
	if err := a.deps.Decide(d.ID, d.Answer, d.By, d.Reason); err != nil && !errors.Is(err, gateway.ErrApprovalGone) {
		a.deps.Log.Warn("an answer from another replica's tab", "approval", d.ID, "err", err)
	}
}

// fresh is the state of the replicas heard of lately.
func (a *Approvals) fresh() []replicaState {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]replicaState, 0, len(a.remote))
	for id, st := range a.remote {
		if time.Since(st.at) > stale {
			delete(a.remote, id)
			continue
		}
		out = append(out, st)
	}
	return out
}

// List is every replica's waiting calls, oldest first.
func (a *Approvals) List() []views.Approval {
	out := a.deps.Local()
	for _, st := range a.fresh() {
		out = append(out, st.Approvals...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// Approvers is how many can answer a call now, on every replica.
func (a *Approvals) Approvers() int {
	n := a.deps.Approvers()
	for _, st := range a.fresh() {
		n += st.Approvers
	}
	return n
}

// Decide answers a waiting call: here, or on the replica where it waits
// (gateway.ErrApprovalGone if it waits nowhere known).
func (a *Approvals) Decide(id string, ans gateway.Answer, by, reason string) error {
	err := a.deps.Decide(id, ans, by, reason)
	if !errors.Is(err, gateway.ErrApprovalGone) {
		return err
	}
	for _, st := range a.fresh() {
		for _, ap := range st.Approvals {
			if ap.ID == id {
				b, err := json.Marshal(decision{ID: id, Answer: ans, By: by, Reason: reason})
				if err != nil {
					return err
				}
				return a.c.Publish(decideTopic, b)
			}
		}
	}
	return err
}
