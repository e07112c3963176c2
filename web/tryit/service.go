package tryit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// Store is what Try it reads of the store.
type Store interface {
	ToolByAgentName(ctx context.Context, agentName string) (store.ToolEntry, *store.Tool, error)
	Server(ctx context.Context, id string) (store.Server, error)
}

// Deps are what the Try it page needs.
type Deps struct {
	Store Store
	// Call routes a call a person started, as the MCP endpoint routes an
	// agent's (gateway.Endpoint.Try).
	Call func(ctx context.Context, agentName string, args any) (*mcp.CallToolResult, error)
	// Publish sends an event to every tab without waiting.
	Publish func(event string, data []byte)
}

// Service serves the Try it page of each tool: its form, and the calls
// made with it, whose progress it publishes live.
type Service struct {
	d Deps
	// progressEvery spaces the live progress events of one call.
	progressEvery time.Duration
	qs            questions // what servers ask, waiting (see questions.go)

	runMu   sync.Mutex
	running map[string]context.CancelCauseFunc // the calls running, by agent name and call id
}

// errCancelled is the cause of a call the person cancelled.
var errCancelled = errors.New("cancelled by the person")

// Cancel stops the call of the tool agent under callID (see
// views.TryView.CallID), if it runs: its page then says it was
// cancelled. It reports whether one ran.
func (s *Service) Cancel(agent, callID string) bool {
	s.runMu.Lock()
	cancel, ok := s.running[agent+" "+callID]
	s.runMu.Unlock()
	if ok {
		cancel(errCancelled)
	}
	return ok
}

// New returns the Try it service.
func New(d Deps) *Service { return &Service{d: d, progressEvery: 100 * time.Millisecond} }

// callIDSyntax is the syntax of a call id (see views.TryView.CallID).
var callIDSyntax = regexp.MustCompile(`^[0-9a-f]{16}$`)

// View is the Try it page of the tool agents know as agent, with a new
// call id. An unknown tool is a 404 *echo.HTTPError.
func (s *Service) View(ctx context.Context, agent string) (views.TryView, error) {
	v, _, err := s.view(ctx, agent)
	return v, err
}

func (s *Service) view(ctx context.Context, agent string) (views.TryView, store.ToolEntry, error) {
	entry, _, err := s.d.Store.ToolByAgentName(ctx, agent)
	if errors.Is(err, store.ErrAgentNameUnknown) {
		return views.TryView{}, entry, echo.NewHTTPError(http.StatusNotFound, "no tool has this name")
	}
	if err != nil {
		return views.TryView{}, entry, err
	}
	srv, err := s.d.Store.Server(ctx, entry.ServerID)
	if errors.Is(err, store.ErrNotFound) {
		return views.TryView{}, entry, echo.NewHTTPError(http.StatusNotFound, "the tool's server is gone")
	}
	if err != nil {
		return views.TryView{}, entry, err
	}
	id := make([]byte, 8)
	rand.Read(id)
	return views.TryView{AgentName: entry.AgentName, ServerID: srv.ID, ServerName: srv.Name, Tool: entry.Name,
		Description: entry.Description, Policy: string(entry.Effective), Form: Form(entry.InputSchema),
		CallID: hex.EncodeToString(id)}, entry, nil
}

// Submit turns a submitted form into the tool's arguments and calls the
// tool with them. It returns the page to show and its status: 422 with
// the person's input and an error per field if the arguments are not
// right (nothing is called then), else 200 with the result, or with why
// the call was refused or failed. The call's progress is published as it
// comes, under the form's call id.
func (s *Service) Submit(ctx context.Context, agent string, form url.Values) (views.TryView, int, error) {
	v, entry, err := s.view(ctx, agent)
	if err != nil {
		return v, 0, err
	}
	if id := formValue(form, "_call"); callIDSyntax.MatchString(id) {
		v.CallID = id
	}
	args, f, problems, ok := Check(entry.InputSchema, form)
	v.Form, v.Problems = f, problems
	if !ok {
		v.FormError = "Some arguments are not right; see the fields below."
		return v, http.StatusUnprocessableEntity, nil
	}
	live := &liveProgress{publish: s.d.Publish, event: views.TryEvent(v.CallID), every: s.progressEvery}
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	key := v.AgentName + " " + v.CallID
	s.runMu.Lock()
	if s.running == nil {
		s.running = map[string]context.CancelCauseFunc{}
	}
	s.running[key] = cancel
	s.runMu.Unlock()
	defer func() {
		s.runMu.Lock()
		delete(s.running, key)
		s.runMu.Unlock()
	}()
	ctx = discovery.WithCallRelay(discovery.WithCallProgress(ctx, live.add), pageRelay{s: s, agent: v.AgentName, callID: v.CallID})
	res, err := s.d.Call(ctx, v.AgentName, args)
	out := &views.TryResult{Duration: time.Since(start), Progress: live.last()}
	if errors.Is(context.Cause(ctx), errCancelled) {
		out.Cancelled = true
		out.Text = "Cancelled: Switchboard stopped waiting and told the server (it may finish the work anyway)."
		v.Result = out
		return v, http.StatusOK, nil
	}
	if err != nil {
		out.Text = err.Error()
	} else {
		out.OK, out.IsError = true, res.IsError
		out.Parts, out.JSON = Result(res)
	}
	v.Result = out
	return v, http.StatusOK, nil
}

// liveProgress publishes a call's progress, at most one event per every
// (and always the one that completes the total), and keeps the last.
type liveProgress struct {
	publish func(event string, data []byte)
	event   string
	every   time.Duration

	mu   sync.Mutex
	p    views.TryProgress
	sent time.Time
}

func (l *liveProgress) add(p discovery.CallProgress) {
	l.mu.Lock()
	l.p = views.TryProgress{Progress: p.Progress, Total: p.Total, Message: p.Message, Count: l.p.Count + 1}
	now := time.Now()
	due := now.Sub(l.sent) >= l.every || (p.Total > 0 && p.Progress >= p.Total)
	if due {
		l.sent = now
	}
	shown := l.p
	l.mu.Unlock()
	if !due || l.publish == nil {
		return
	}
	var buf bytes.Buffer
	if views.TryProgressLine(shown).Render(context.Background(), &buf) == nil {
		l.publish(l.event, buf.Bytes())
	}
}

// last is the last progress, nil if there was none.
func (l *liveProgress) last() *views.TryProgress {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p.Count == 0 {
		return nil
	}
	p := l.p
	return &p
}
