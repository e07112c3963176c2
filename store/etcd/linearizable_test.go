package etcd

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// A Jepsen-style check of the policy rules under concurrency: clients,
// each on one of several replicas, set policies, record verifications
// that change the tools' definitions, approve what they last saw and
// read, all at once; the history of what they asked and were answered is
// then checked for linearizability against a model whose steps are the
// store's own rules (store.MergeTools, store.ApplyPolicy, store.Approve,
// store.EffectivePolicy). The specification is the pure rules; the
// implementation under test is etcd with its compare-and-swap commits.
// The history is checked twice: tool by tool (toolModel), and as one
// server (serverModel), which also holds listings (Tools) to seeing a
// verification's changes of all tools at once.

// Limits of one run: the workload stops at whichever comes first, so the
// history stays small enough to check in a moment, also under -race.
const (
	linWorkload = 3 * time.Second
	linMaxOps   = 600
	linClients  = 8
	linReplicas = 4
	linCheck    = 30 * time.Second
)

// linTools are the server's tools, and linVersions the definitions a
// verification finds of each: a new version changes the tool's pin.
var (
	linTools    = [...]string{"read_file", "search", "write_file"}
	linVersions = []string{"v1", "v2", "v3"}
)

// toolView is what one answer of the store shows of a tool: its current
// pin and state, its policy and the pin that policy was approved at, and
// the policy that applies. Times (SetAt, FirstSeen, …) are left out: the
// replicas' clocks, not the rules, decide them.
type toolView struct {
	Pin       string
	State     store.ToolState
	Policy    store.Policy
	PolicyPin string
	Effective store.Policy
}

// toolState is the model's state of one tool: what the store keeps of it.
// Known is false until a verification found the tool; ApprovedPin is the
// pin of the definition kept as approved (see Catalog.ToolVersions).
type toolState struct {
	Known bool
	toolView
	ApprovedPin string
}

// opKind is what a client asked.
type opKind int

const (
	opVerify opKind = iota
	opSetPolicy
	opApprove
	opRead
	opReadAll
)

// opInput is one request. For opVerify, Offered is the tools the
// verification found. A request of the whole server (opVerify,
// opReadAll) is narrowed to one tool for the model of that tool (see
// narrow): Tool is then set, and Offered holds only that tool (or none).
type opInput struct {
	Kind    opKind
	Tool    string
	Policy  store.Policy // opSetPolicy
	Pin     string       // opApprove
	Offered []store.Tool // opVerify
}

// opOutput is one answer. Err is the error's class (see errClass), empty
// for none; Entry is the tool returned by a successful SetPolicy,
// ApproveTool or ToolVersions (or, narrowed, Tools); Approved is the pin
// of the approved definition ToolVersions returned ("" for none); All is
// every tool as Tools returned them, in linTools' order (zero for a tool
// not listed). Unknown marks a
// request that failed for another reason (etcd unreachable): it may or
// may not have taken effect, and any answer is allowed.
type opOutput struct {
	Err      string
	Entry    toolView
	Approved string
	All      [len(linTools)]toolView
	Unknown  bool
}

// errClass names the outcomes of the rules; ok is false for any other
// error.
func errClass(err error) (class string, ok bool) {
	switch {
	case err == nil:
		return "", true
	case errors.Is(err, store.ErrPinMismatch):
		return "pin mismatch", true
	case errors.Is(err, store.ErrNotChanged):
		return "not changed", true
	case errors.Is(err, store.ErrToolNotFound):
		return "tool not found", true
	}
	return "", false
}

func viewOf(e store.ToolEntry) toolView {
	return toolView{Pin: e.Pin, State: e.State, Policy: e.Policy.Policy, PolicyPin: e.Policy.Pin, Effective: e.Effective}
}

// entry is s as the rules take it: a ToolEntry with only what the model
// keeps.
func (s toolState) entry(serverID, name string) store.ToolEntry {
	return store.ToolEntry{
		Tool:      store.Tool{ServerID: serverID, Name: name, Pin: s.Pin, State: s.State},
		Policy:    store.PolicySetting{Policy: s.Policy, Pin: s.PolicyPin},
		Effective: s.Effective,
	}
}

// step is the specification: the state after in, and the answer the
// store must give, by the store's rules. The clock of the rules is fixed:
// times are not part of the state.
func step(srv store.Server, s toolState, in opInput) (toolState, opOutput) {
	var at time.Time
	if in.Kind == opReadAll {
		if !s.Known {
			return s, opOutput{}
		}
		return s, opOutput{Entry: s.toolView}
	}
	if in.Kind != opVerify && !s.Known {
		return s, opOutput{Err: "tool not found"}
	}
	e := s.entry(srv.ID, in.Tool)
	switch in.Kind {
	case opVerify:
		known := map[string]store.ToolEntry{}
		if s.Known {
			known[in.Tool] = e
		}
		m := store.MergeTools(srv, known, in.Offered, at)
		i := slices.IndexFunc(m.Tools, func(t store.Tool) bool { return t.Name == in.Tool })
		if i < 0 {
			return s, opOutput{} // neither offered nor newly missing
		}
		e.Tool = m.Tools[i]
		if p, ok := m.NewPolicies[in.Tool]; ok {
			e.Policy = p
			s.ApprovedPin = e.Pin
		}
		e.Effective = store.EffectivePolicy(e.Tool, e.Policy)
		s.Known, s.toolView = true, viewOf(e)
		return s, opOutput{}
	case opSetPolicy:
		e, first := store.ApplyPolicy(e, in.Policy, "", "lin", at)
		if first {
			s.ApprovedPin = e.Pin
		}
		s.toolView = viewOf(e)
		return s, opOutput{Entry: s.toolView}
	case opApprove:
		e, err := store.Approve(e, in.Pin, "lin", at)
		if err != nil {
			class, _ := errClass(err)
			return s, opOutput{Err: class}
		}
		s.toolView, s.ApprovedPin = viewOf(e), e.Pin
		return s, opOutput{Entry: s.toolView}
	}
	out := opOutput{Entry: s.toolView}
	if s.ApprovedPin == s.PolicyPin {
		out.Approved = s.ApprovedPin
	}
	return s, out
}

// pinNames names pins for people: "search@v2".
type pinNames map[string]string

func newPinNames() pinNames {
	n := pinNames{}
	for _, tool := range linTools {
		for _, v := range linVersions {
			n[storetest.MkTool(tool, v).Pin] = tool + "@" + v
		}
	}
	return n
}

func (n pinNames) of(pin string) string {
	if pin == "" {
		return "-"
	}
	if name, ok := n[pin]; ok {
		return name[strings.IndexByte(name, '@')+1:]
	}
	return pin[:min(len(pin), 8)]
}

func (n pinNames) view(v toolView) string {
	return fmt.Sprintf("%s %s, policy %s@%s, effective %s", n.of(v.Pin), v.State, v.Policy, n.of(v.PolicyPin), v.Effective)
}

// narrow is op, a request of the whole server, as the model of the tool
// linTools[i] sees it: a verification of that tool alone, or a listing
// that shows only that tool.
func narrow(op porcupine.Operation, i int) porcupine.Operation {
	in, out := op.Input.(opInput), op.Output.(opOutput)
	narrowed := opInput{Kind: in.Kind, Tool: linTools[i]}
	if in.Kind == opVerify {
		narrowed.Offered = []store.Tool{}
		for _, t := range in.Offered {
			if t.Name == linTools[i] {
				narrowed.Offered = append(narrowed.Offered, t)
			}
		}
	}
	if in.Kind == opReadAll && !out.Unknown {
		out = opOutput{Entry: out.All[i]}
	}
	op.Input, op.Output = narrowed, out
	return op
}

// toolModel is the porcupine model of srv's tools, one partition per
// tool: a verification or a listing, which touch every tool, appear in
// each partition narrowed to that tool (see narrow). It checks that each
// tool's history is linearizable, not that a verification changes all
// tools at once (see serverModel).
func toolModel(srv store.Server, names pinNames) porcupine.Model {
	return porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			out := make([][]porcupine.Operation, len(linTools))
			for _, op := range history {
				in := op.Input.(opInput)
				for i, tool := range linTools {
					if in.Kind == opVerify || in.Kind == opReadAll {
						out[i] = append(out[i], narrow(op, i))
					} else if in.Tool == tool {
						out[i] = append(out[i], op)
					}
				}
			}
			return out
		},
		Init: func() any { return toolState{} },
		Step: func(state, input, output any) (bool, any) {
			next, want := step(srv, state.(toolState), input.(opInput))
			got := output.(opOutput)
			return got.Unknown || got == want, next
		},
		Equal: func(a, b any) bool { return a.(toolState) == b.(toolState) },
		Hash:  func(s any) uint64 { return maphash.Comparable(stateSeed, s.(toolState)) },
		DescribeOperation: func(input, output any) string {
			in, out := input.(opInput), output.(opOutput)
			var call string
			switch in.Kind {
			case opVerify:
				offered := make([]string, 0, len(in.Offered))
				for _, t := range in.Offered {
					offered = append(offered, names[t.Pin])
				}
				if in.Tool != "" && len(offered) == 0 {
					offered = append(offered, in.Tool+" missing")
				}
				call = fmt.Sprintf("RecordSuccess(%s)", strings.Join(offered, ", "))
			case opSetPolicy:
				call = fmt.Sprintf("SetPolicy(%s, %s)", in.Tool, in.Policy)
			case opApprove:
				call = fmt.Sprintf("ApproveTool(%s, %s)", in.Tool, names.of(in.Pin))
			case opRead:
				call = fmt.Sprintf("ToolVersions(%s)", in.Tool)
			case opReadAll:
				call = "Tools()"
				if in.Tool != "" {
					call = fmt.Sprintf("Tools()[%s]", in.Tool)
				}
			}
			switch {
			case out.Unknown:
				return call + " → unknown"
			case out.Err != "":
				return call + " → " + out.Err
			case in.Kind == opVerify:
				return call + " → ok"
			case in.Kind == opRead:
				return fmt.Sprintf("%s → %s, approved %s", call, names.view(out.Entry), names.of(out.Approved))
			case in.Kind == opReadAll && in.Tool == "":
				all := make([]string, len(linTools))
				for i, v := range out.All {
					all[i] = linTools[i] + ": " + names.view(v)
				}
				return call + " → " + strings.Join(all, "; ")
			}
			return call + " → " + names.view(out.Entry)
		},
		DescribeState: func(state any) string {
			s := state.(toolState)
			if !s.Known {
				return "unknown"
			}
			return fmt.Sprintf("%s, approved %s", names.view(s.toolView), names.of(s.ApprovedPin))
		},
	}
}

// stateSeed seeds the models' hashes of states.
var stateSeed = maphash.MakeSeed()

// serverState is the model's state of every tool of the server, in
// linTools' order.
type serverState [len(linTools)]toolState

// serverModel is the porcupine model of the server as a whole: one
// state for all its tools, so that a listing that shows a verification's
// change of one tool but not of another is illegal. It checks what
// toolModel checks and that; toolModel's partitions are quicker to check
// and to read.
func serverModel(srv store.Server, names pinNames) porcupine.Model {
	perTool := toolModel(srv, names)
	return porcupine.Model{
		Init: func() any { return serverState{} },
		Step: func(state, input, output any) (bool, any) {
			s, in, got := state.(serverState), input.(opInput), output.(opOutput)
			var want opOutput
			for i, tool := range linTools {
				switch {
				case in.Kind == opVerify:
					s[i], _ = step(srv, s[i], narrow(porcupine.Operation{Input: in, Output: got}, i).Input.(opInput))
				case in.Kind == opReadAll:
					_, out := step(srv, s[i], opInput{Kind: opReadAll, Tool: tool})
					want.All[i] = out.Entry
				case in.Tool == tool:
					s[i], want = step(srv, s[i], in)
				}
			}
			return got.Unknown || got == want, s
		},
		Equal:             func(a, b any) bool { return a.(serverState) == b.(serverState) },
		Hash:              func(s any) uint64 { return maphash.Comparable(stateSeed, s.(serverState)) },
		DescribeOperation: perTool.DescribeOperation,
		DescribeState: func(state any) string {
			s := state.(serverState)
			all := make([]string, len(linTools))
			for i, ts := range s {
				all[i] = linTools[i] + ": " + perTool.DescribeState(ts)
			}
			return strings.Join(all, "; ")
		},
	}
}

// linStats counts what a run did.
type linStats struct {
	ops      [opReadAll + 1]int // by opKind
	outcomes map[string]int
	unknown  int
	// changes counts the requests that changed the store.
	changes int
}

// linClient is one client's part of the history, and what it last saw
// of each tool's pin (what it approves).
type linClient struct {
	id   int
	db   store.Store
	rng  *rand.Rand
	seen map[string]string
	ops  []porcupine.Operation
}

// runWorkload runs the concurrent workload on replicas against server
// srv, verified once first, and returns the history: every request with
// its answer, then a listing and one read of every tool on every replica. Clients are
// spread evenly over the replicas, each keeping to its own.
func runWorkload(t *testing.T, replicas []store.Store, srv store.Server) ([]porcupine.Operation, linStats, time.Duration) {
	ctx := t.Context()
	start := time.Now()
	now := func() int64 { return time.Since(start).Nanoseconds() }
	var jobs atomic.Int64
	verification := func(rng *rand.Rand, first bool) store.Verification {
		var tools []store.Tool
		for _, name := range linTools {
			switch r := rng.IntN(20); {
			case first:
				tools = append(tools, storetest.MkTool(name, linVersions[0]))
			case r == 0: // no longer offered: the tool turns missing
			case r < 12:
				tools = append(tools, storetest.MkTool(name, linVersions[0]))
			case r < 18:
				tools = append(tools, storetest.MkTool(name, linVersions[1]))
			default:
				tools = append(tools, storetest.MkTool(name, linVersions[2]))
			}
		}
		return storetest.Verification(srv, fmt.Sprintf("job-%d", jobs.Add(1)), time.Now(), tools...)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("workload seed %d", seed)

	// do runs one request of c and records it.
	var failures atomic.Int64
	do := func(c *linClient, in opInput) {
		call := now()
		var out opOutput
		var err error
		switch in.Kind {
		case opVerify:
			v := verification(c.rng, len(c.ops) == 0 && c.id == 0)
			in.Offered = v.Tools
			err = c.db.RecordSuccess(ctx, srv.ID, v)
		case opSetPolicy:
			var e store.ToolEntry
			e, err = c.db.SetPolicy(ctx, store.ToolRef{ServerID: srv.ID, Tool: in.Tool}, in.Policy, "lin")
			out.Entry = viewOf(e)
		case opApprove:
			var e store.ToolEntry
			e, err = c.db.ApproveTool(ctx, store.ToolRef{ServerID: srv.ID, Tool: in.Tool}, in.Pin, "lin")
			out.Entry = viewOf(e)
		case opRead:
			e, approved, rerr := c.db.ToolVersions(ctx, store.ToolRef{ServerID: srv.ID, Tool: in.Tool})
			out.Entry, err = viewOf(e), rerr
			if approved != nil {
				out.Approved = approved.Pin
			}
		case opReadAll:
			var list []store.ToolEntry
			list, err = c.db.Tools(ctx, srv.ID)
			for _, e := range list {
				if i := slices.Index(linTools[:], e.Name); i >= 0 {
					out.All[i] = viewOf(e)
				} else {
					t.Errorf("Tools(%q) lists %q; want only %q", srv.ID, e.Name, linTools)
				}
			}
		}
		ret := now()
		class, ok := errClass(err)
		switch {
		case !ok:
			// Its effect is unknown: it may take effect at any time after
			// its call, so it never returns as far as the checker knows.
			if failures.Add(1) <= 5 {
				t.Errorf("client %d: %v = %v; want nil or an error of the rules", c.id, in.Kind, err)
			}
			out, ret = opOutput{Unknown: true}, math.MaxInt64
		case err != nil:
			out = opOutput{Err: class}
		default:
			if in.Kind != opVerify && in.Kind != opReadAll {
				c.seen[in.Tool] = out.Entry.Pin
			}
		}
		c.ops = append(c.ops, porcupine.Operation{ClientId: c.id, Input: in, Call: call, Output: out, Return: ret})
	}

	clients := make([]*linClient, linClients)
	for i := range clients {
		clients[i] = &linClient{id: i, db: replicas[i%len(replicas)], rng: rand.New(rand.NewPCG(seed, uint64(i))), seen: map[string]string{}}
	}
	do(clients[0], opInput{Kind: opVerify}) // the first verification: every tool at v1, with the server's default policy

	var budget atomic.Int64
	budget.Store(linMaxOps)
	deadline := start.Add(linWorkload)
	var wg sync.WaitGroup
	for _, c := range clients {
		// Each client runs until the budget is spent or the deadline passed.
		wg.Go(func() {
			for budget.Add(-1) >= 0 && time.Now().Before(deadline) {
				tool := linTools[c.rng.IntN(len(linTools))]
				switch r := c.rng.IntN(100); {
				case r < 20:
					do(c, opInput{Kind: opVerify})
				case r < 45:
					policies := []store.Policy{store.PolicyAllow, store.PolicyAsk, store.PolicyDeny}
					do(c, opInput{Kind: opSetPolicy, Tool: tool, Policy: policies[c.rng.IntN(len(policies))]})
				case r < 65:
					if c.rng.IntN(2) == 0 {
						// As a person does: look at the tool, then
						// approve what was shown.
						do(c, opInput{Kind: opRead, Tool: tool})
					}
					pin, ok := c.seen[tool]
					if !ok {
						pin = storetest.MkTool(tool, linVersions[0]).Pin
					}
					do(c, opInput{Kind: opApprove, Tool: tool, Pin: pin})
				case r < 75:
					do(c, opInput{Kind: opReadAll})
				default:
					do(c, opInput{Kind: opRead, Tool: tool})
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	// Every replica reads every tool once the others are done: they must
	// all show the last state.
	for i, db := range replicas {
		c := &linClient{id: linClients + i, db: db, seen: map[string]string{}}
		do(c, opInput{Kind: opReadAll})
		for _, tool := range linTools {
			do(c, opInput{Kind: opRead, Tool: tool})
		}
		clients = append(clients, c)
	}

	stats := linStats{outcomes: map[string]int{}}
	var ops []porcupine.Operation
	for _, c := range clients {
		for _, op := range c.ops {
			in, out := op.Input.(opInput), op.Output.(opOutput)
			stats.ops[in.Kind]++
			switch {
			case out.Unknown:
				stats.unknown++
			case in.Kind == opApprove && out.Err == "":
				stats.outcomes["approved"]++
			case out.Err != "":
				stats.outcomes[out.Err]++
			}
			if in.Kind != opRead && !out.Unknown && out.Err == "" {
				stats.changes++
			}
		}
		ops = append(ops, c.ops...)
	}
	return ops, stats, elapsed
}

func (k opKind) String() string {
	return [...]string{"RecordSuccess", "SetPolicy", "ApproveTool", "ToolVersions", "Tools"}[k]
}

// checkHistory checks ops against the model (named name); on a
// violation it writes porcupine's visualization into the test's artifact
// directory.
func checkHistory(t *testing.T, name string, model porcupine.Model, ops []porcupine.Operation) time.Duration {
	t.Helper()
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, ops, linCheck)
	took := time.Since(start)
	switch res {
	case porcupine.Ok:
		return took
	case porcupine.Unknown:
		t.Fatalf("CheckOperations(%s, %d ops) = Unknown after %v: the history is too long to check; shorten the workload (linMaxOps)", name, len(ops), took)
	}
	path := filepath.Join(t.ArtifactDir(), name+".html")
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		t.Errorf("VisualizePath(%s) = %v", path, err)
	}
	t.Errorf("CheckOperations(%s, %d ops) = %s; want Ok: the store's answers are not those of any order of its requests under the rules; "+
		"the history is drawn in %s (kept if go test runs with -artifacts -outputdir DIR)", name, len(ops), res, path)
	return took
}

// etcdTxns is how many transactions the etcd member answered so far (its
// grpc_server_handled_total metric): those that committed and those whose
// compare failed, which update runs again.
func etcdTxns(t *testing.T) int64 {
	t.Helper()
	resp, err := http.Get(server.Endpoint + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	const metric = `grpc_server_handled_total{grpc_code="OK",grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary"} `
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), metric); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("etcd metric %s%q: %v", metric, v, err)
			}
			return int64(n)
		}
	}
	t.Fatalf("etcd's /metrics has no %s", metric)
	return 0
}

// TestLinearizablePolicies runs the concurrent workload against replicas
// of one etcd store and checks the history; bolt, one file shared by
// every client, is the baseline.
func TestLinearizablePolicies(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) []store.Store
		// txns counts the backend's transactions, commits and conflicts
		// (nil if it cannot).
		txns func(t *testing.T) int64
	}{
		{"etcd replicas", func(t *testing.T) []store.Store {
			prefix := fmt.Sprintf("/test-%d/", stores.Add(1))
			out := make([]store.Store, linReplicas)
			for i := range out {
				out[i] = openAt(t, prefix)
			}
			return out
		}, etcdTxns},
		{"bolt", func(t *testing.T) []store.Store {
			db, err := bolt.Open(filepath.Join(t.TempDir(), "switchboard.db"), bolt.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return []store.Store{db}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replicas := tc.open(t)
			srv := storetest.MustCreate(t, replicas[0], storetest.StdioServer("files"))
			var txns int64
			if tc.txns != nil {
				txns = tc.txns(t)
			}
			ops, stats, elapsed := runWorkload(t, replicas, srv)
			if tc.txns != nil {
				txns = tc.txns(t) - txns
				t.Logf("%d etcd transactions for %d changes: %d met a conflict and ran again", txns, stats.changes, txns-int64(stats.changes))
			}
			names := newPinNames()
			models := []struct {
				name  string
				model porcupine.Model
			}{{"per-tool", toolModel(srv, names)}, {"server", serverModel(srv, names)}}
			took := make([]time.Duration, len(models))
			for i, m := range models {
				took[i] = checkHistory(t, m.name, m.model, ops)
			}
			t.Logf("%d ops on %d replicas by %d clients in %v (%.0f ops/s); checked in %v per tool, %v as a whole",
				len(ops), len(replicas), linClients, elapsed.Round(time.Millisecond), float64(len(ops))/elapsed.Seconds(),
				took[0].Round(time.Millisecond), took[1].Round(time.Millisecond))
			t.Logf("requests: %d RecordSuccess, %d SetPolicy, %d ApproveTool, %d ToolVersions, %d Tools; outcomes %v; unknown %d",
				stats.ops[opVerify], stats.ops[opSetPolicy], stats.ops[opApprove], stats.ops[opRead], stats.ops[opReadAll], stats.outcomes, stats.unknown)
			if t.Failed() {
				return
			}

			// The checker is not vacuous on this history: a read of a tool
			// after its last read, with nothing in between, that shows
			// another policy is illegal. (Only per tool: proving a history
			// illegal as a whole means trying every order, which takes
			// long; TestLinearizabilityChecker shows the whole-server
			// model rejecting.)
			last := ops[len(ops)-1]
			forged := last
			forged.Call, forged.Return = last.Return+1, last.Return+2
			out := last.Output.(opOutput)
			out.Entry.Policy = map[store.Policy]store.Policy{store.PolicyAllow: store.PolicyAsk, store.PolicyAsk: store.PolicyDeny, store.PolicyDeny: store.PolicyAllow}[out.Entry.Policy]
			forged.Output = out
			if res := porcupine.CheckOperationsTimeout(models[0].model, append(slices.Clone(ops), forged), linCheck); res != porcupine.Illegal {
				t.Errorf("CheckOperations(%s, history and a read of %s showing policy %s after its last read) = %s; want Illegal",
					models[0].name, last.Input.(opInput).Tool, out.Entry.Policy, res)
			}
		})
	}
}

// TestLinearizabilityChecker runs the checker over short histories
// written by hand, some that the rules allow and some that they do not,
// so that a pass of TestLinearizablePolicies means something.
func TestLinearizabilityChecker(t *testing.T) {
	srv := storetest.StdioServer("files") // default policy ask
	pin := func(version string) string { return storetest.MkTool("search", version).Pin }
	verify := func(versions ...string) opInput {
		in := opInput{Kind: opVerify}
		for _, v := range versions {
			in.Offered = append(in.Offered, storetest.MkTool("search", v))
		}
		return in
	}
	setPolicy := func(p store.Policy) opInput { return opInput{Kind: opSetPolicy, Tool: "search", Policy: p} }
	approve := func(version string) opInput { return opInput{Kind: opApprove, Tool: "search", Pin: pin(version)} }
	read := opInput{Kind: opRead, Tool: "search"}
	entry := func(version string, state store.ToolState, p store.Policy, at string, eff store.Policy) opOutput {
		return opOutput{Entry: toolView{Pin: pin(version), State: state, Policy: p, PolicyPin: pin(at), Effective: eff}}
	}
	seen := func(o opOutput, approved string) opOutput {
		o.Approved = pin(approved)
		return o
	}
	// op is one request by client from call to ret.
	type op struct {
		client    int
		call, ret int64
		in        opInput
		out       opOutput
	}
	first := op{0, 0, 1, verify("v1"), opOutput{}}
	for _, tc := range []struct {
		name string
		ops  []op
		want porcupine.CheckResult
	}{
		{"read before any verification", []op{
			{0, 0, 1, read, opOutput{Err: "tool not found"}},
			{0, 2, 3, verify("v1"), opOutput{}},
			{0, 4, 5, read, seen(entry("v1", store.ToolActive, store.PolicyAsk, "v1", store.PolicyAsk), "v1")},
		}, porcupine.Ok},
		{"read after set-policy sees it", []op{first,
			{0, 2, 3, setPolicy(store.PolicyDeny), entry("v1", store.ToolActive, store.PolicyDeny, "v1", store.PolicyDeny)},
			{1, 4, 5, read, seen(entry("v1", store.ToolActive, store.PolicyDeny, "v1", store.PolicyDeny), "v1")},
		}, porcupine.Ok},
		{"stale read after set-policy returned", []op{first,
			{0, 2, 3, setPolicy(store.PolicyDeny), entry("v1", store.ToolActive, store.PolicyDeny, "v1", store.PolicyDeny)},
			{1, 4, 5, read, seen(entry("v1", store.ToolActive, store.PolicyAsk, "v1", store.PolicyAsk), "v1")},
		}, porcupine.Illegal},
		{"read concurrent with set-policy sees the old policy", []op{first,
			{0, 2, 5, setPolicy(store.PolicyDeny), entry("v1", store.ToolActive, store.PolicyDeny, "v1", store.PolicyDeny)},
			{1, 3, 4, read, seen(entry("v1", store.ToolActive, store.PolicyAsk, "v1", store.PolicyAsk), "v1")},
		}, porcupine.Ok},
		{"reads that see set-policies in two orders", []op{first,
			{0, 2, 9, setPolicy(store.PolicyDeny), entry("v1", store.ToolActive, store.PolicyDeny, "v1", store.PolicyDeny)},
			{1, 2, 9, setPolicy(store.PolicyAllow), entry("v1", store.ToolActive, store.PolicyAllow, "v1", store.PolicyAllow)},
			{2, 3, 4, read, seen(entry("v1", store.ToolActive, store.PolicyDeny, "v1", store.PolicyDeny), "v1")},
			{2, 5, 6, read, seen(entry("v1", store.ToolActive, store.PolicyAllow, "v1", store.PolicyAllow), "v1")},
			{3, 7, 8, read, seen(entry("v1", store.ToolActive, store.PolicyDeny, "v1", store.PolicyDeny), "v1")},
		}, porcupine.Illegal},
		{"a changed tool is denied whatever its policy", []op{first,
			{0, 2, 3, setPolicy(store.PolicyAllow), entry("v1", store.ToolActive, store.PolicyAllow, "v1", store.PolicyAllow)},
			{0, 4, 5, verify("v2"), opOutput{}},
			{1, 6, 7, read, seen(entry("v2", store.ToolChanged, store.PolicyAllow, "v1", store.PolicyDeny), "v1")},
		}, porcupine.Ok},
		{"a changed tool read as allowed", []op{first,
			{0, 2, 3, setPolicy(store.PolicyAllow), entry("v1", store.ToolActive, store.PolicyAllow, "v1", store.PolicyAllow)},
			{0, 4, 5, verify("v2"), opOutput{}},
			{1, 6, 7, read, seen(entry("v2", store.ToolChanged, store.PolicyAllow, "v1", store.PolicyAllow), "v1")},
		}, porcupine.Illegal},
		{"set-policy on a changed tool approves nothing", []op{first,
			{0, 2, 3, verify("v2"), opOutput{}},
			{1, 4, 5, setPolicy(store.PolicyAllow), entry("v2", store.ToolChanged, store.PolicyAllow, "v2", store.PolicyAllow)},
		}, porcupine.Illegal},
		{"approve, then approve again", []op{first,
			{0, 2, 3, verify("v2"), opOutput{}},
			{1, 4, 5, approve("v2"), entry("v2", store.ToolActive, store.PolicyAsk, "v2", store.PolicyAsk)},
			{2, 6, 7, approve("v2"), opOutput{Err: "not changed"}},
			{2, 8, 9, read, seen(entry("v2", store.ToolActive, store.PolicyAsk, "v2", store.PolicyAsk), "v2")},
		}, porcupine.Ok},
		{"two approvals of one change both succeed", []op{first,
			{0, 2, 3, verify("v2"), opOutput{}},
			{1, 4, 6, approve("v2"), entry("v2", store.ToolActive, store.PolicyAsk, "v2", store.PolicyAsk)},
			{2, 5, 7, approve("v2"), entry("v2", store.ToolActive, store.PolicyAsk, "v2", store.PolicyAsk)},
		}, porcupine.Illegal},
		{"approval of a version that changed again", []op{first,
			{0, 2, 3, verify("v2"), opOutput{}},
			{0, 4, 5, verify("v3"), opOutput{}},
			{1, 6, 7, approve("v2"), opOutput{Err: "pin mismatch"}},
		}, porcupine.Ok},
		{"approval of a version that changed again succeeds", []op{first,
			{0, 2, 3, verify("v2"), opOutput{}},
			{0, 4, 5, verify("v3"), opOutput{}},
			{1, 6, 7, approve("v2"), entry("v2", store.ToolActive, store.PolicyAsk, "v2", store.PolicyAsk)},
		}, porcupine.Illegal},
		{"a tool no longer offered, then back at its approved version", []op{first,
			{0, 2, 3, verify(), opOutput{}},
			{1, 4, 5, read, seen(entry("v1", store.ToolMissing, store.PolicyAsk, "v1", store.PolicyAsk), "v1")},
			{0, 6, 7, verify("v1"), opOutput{}},
			{1, 8, 9, read, seen(entry("v1", store.ToolActive, store.PolicyAsk, "v1", store.PolicyAsk), "v1")},
		}, porcupine.Ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			history := make([]porcupine.Operation, len(tc.ops))
			for i, o := range tc.ops {
				history[i] = porcupine.Operation{ClientId: o.client, Call: o.call, Return: o.ret, Input: o.in, Output: o.out}
				if o.in.Kind != opVerify {
					continue
				}
				// A verification offers the other tools at v1, so that
				// their partitions are there and stay quiet.
				in := o.in
				in.Offered = slices.Clone(in.Offered)
				for _, tool := range linTools {
					if tool == "search" {
						continue
					}
					in.Offered = append(in.Offered, storetest.MkTool(tool, "v1"))
				}
				history[i].Input = in
			}
			// The history is of one tool: both models judge it alike.
			for name, model := range map[string]porcupine.Model{"per-tool": toolModel(srv, newPinNames()), "server": serverModel(srv, newPinNames())} {
				if got := porcupine.CheckOperationsTimeout(model, history, linCheck); got != tc.want {
					t.Errorf("CheckOperations(%s, %s) = %s; want %s", name, tc.name, got, tc.want)
				}
			}
		})
	}
}

// TestLinearizabilityCheckerListing shows what the whole-server model
// adds: a listing concurrent with a verification that shows one tool
// after it and another before it passes tool by tool, but is not what
// one atomic verification allows.
func TestLinearizabilityCheckerListing(t *testing.T) {
	srv := storetest.StdioServer("files") // default policy ask
	verify := func(versions ...string) opInput {
		in := opInput{Kind: opVerify}
		for i, v := range versions {
			in.Offered = append(in.Offered, storetest.MkTool(linTools[i], v))
		}
		return in
	}
	view := func(tool, version string, state store.ToolState, effective store.Policy) toolView {
		return toolView{Pin: storetest.MkTool(tool, version).Pin, State: state, Policy: store.PolicyAsk,
			PolicyPin: storetest.MkTool(tool, "v1").Pin, Effective: effective}
	}
	active := func(i int) toolView { return view(linTools[i], "v1", store.ToolActive, store.PolicyAsk) }
	changed := func(i int) toolView { return view(linTools[i], "v2", store.ToolChanged, store.PolicyDeny) }
	listing := func(all ...toolView) opOutput { return opOutput{All: [len(linTools)]toolView(all)} }
	for _, tc := range []struct {
		name         string
		listed       opOutput
		tool, server porcupine.CheckResult
	}{
		{"listing before the verification", listing(active(0), active(1), active(2)), porcupine.Ok, porcupine.Ok},
		{"listing after the verification", listing(changed(0), changed(1), active(2)), porcupine.Ok, porcupine.Ok},
		{"listing torn across the verification", listing(changed(0), active(1), active(2)), porcupine.Ok, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			history := []porcupine.Operation{
				{ClientId: 0, Call: 0, Return: 1, Input: verify("v1", "v1", "v1"), Output: opOutput{}},
				{ClientId: 0, Call: 2, Return: 9, Input: verify("v2", "v2", "v1"), Output: opOutput{}},
				{ClientId: 1, Call: 3, Return: 4, Input: opInput{Kind: opReadAll}, Output: tc.listed},
			}
			if got := porcupine.CheckOperationsTimeout(toolModel(srv, newPinNames()), history, linCheck); got != tc.tool {
				t.Errorf("CheckOperations(per-tool, %s) = %s; want %s", tc.name, got, tc.tool)
			}
			if got := porcupine.CheckOperationsTimeout(serverModel(srv, newPinNames()), history, linCheck); got != tc.server {
				t.Errorf("CheckOperations(server, %s) = %s; want %s", tc.name, got, tc.server)
			}
		})
	}
}
