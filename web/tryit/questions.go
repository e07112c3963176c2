package tryit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"sync"

	"github.com/a-h/templ"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/views"
)

// What a server asks during a Try it call (a model's message, the
// person's input, the roots) is asked of the person who made the call,
// on the page, as an agent's client would ask them: the question is
// published under the call's id, and the person's answer (POST …/answer)
// goes back to the server. It waits as long as the call does.

// maxQuestionText caps what a question shows of each text the server
// sent.
const maxQuestionText = 8 << 10

// question is one question waiting for the person's answer.
type question struct {
	view   views.TryQuestion
	schema json.RawMessage // a form's requested schema
	answer chan url.Values
}

// questions are the questions waiting, by call id.
type questions struct {
	mu sync.Mutex
	m  map[string]*question
}

// pageRelay asks the person of the Try it call callID (see
// discovery.Relay).
type pageRelay struct {
	s      *Service
	agent  string
	callID string
}

// ErrDeclined is a question the person declined.
var ErrDeclined = errors.New("the person declined the server's request")

// ask publishes q and waits for the person's answer, or ctx's end.
func (r pageRelay) ask(ctx context.Context, q *question) (url.Values, error) {
	q.view.AgentName, q.view.CallID = r.agent, r.callID
	q.answer = make(chan url.Values, 1)
	r.s.qs.mu.Lock()
	if r.s.qs.m == nil {
		r.s.qs.m = map[string]*question{}
	}
	if _, busy := r.s.qs.m[r.callID]; busy {
		r.s.qs.mu.Unlock()
		return nil, errors.New("the person is already answering another question of this call")
	}
	r.s.qs.m[r.callID] = q
	r.s.qs.mu.Unlock()
	defer func() {
		r.s.qs.mu.Lock()
		delete(r.s.qs.m, r.callID)
		r.s.qs.mu.Unlock()
		r.publish(nil)
	}()
	r.publish(views.TryQuestionBox(q.view))
	select {
	case a := <-q.answer:
		if a.Get("_action") == "decline" {
			return a, ErrDeclined
		}
		return a, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// publish shows c in the call's question area (nothing if nil).
func (r pageRelay) publish(c templ.Component) {
	if r.s.d.Publish == nil {
		return
	}
	var b bytes.Buffer
	if c != nil {
		_ = c.Render(context.Background(), &b)
	}
	if b.Len() == 0 {
		b.WriteString(" ") // an event with no data clears nothing
	}
	r.s.d.Publish(views.TryQuestionEvent(r.callID), b.Bytes())
}

func (r pageRelay) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	q := &question{view: views.TryQuestion{Kind: views.QuestionSampling, SystemPrompt: cutQuestion(req.SystemPrompt)}}
	for _, m := range req.Messages {
		q.view.Messages = append(q.view.Messages, views.TryMessage{Role: string(m.Role), Text: cutQuestion(contentText(m.Content))})
	}
	a, err := r.ask(ctx, q)
	if err != nil {
		return nil, err
	}
	model := strings.TrimSpace(a.Get("_model"))
	if model == "" {
		model = "person"
	}
	return &mcp.CreateMessageResult{Model: model, StopReason: "endTurn",
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent(a.Get("_reply"))}}, nil
}

func (r pageRelay) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p := req.Params
	q := &question{view: views.TryQuestion{Kind: views.QuestionForm, Message: cutQuestion(p.Message)}}
	if p.Mode == mcp.ElicitationModeURL {
		q.view.Kind, q.view.URL = views.QuestionURL, cutQuestion(p.URL)
	} else {
		q.schema, _ = json.Marshal(p.RequestedSchema)
		q.view.Form = Form(q.schema)
	}
	a, err := r.ask(ctx, q)
	switch {
	case errors.Is(err, ErrDeclined):
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	case err != nil:
		return nil, err
	}
	res := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}
	if q.view.Kind == views.QuestionForm {
		content, _, _, _ := Check(q.schema, a) // checked when answered (see Answer)
		res.Content = content
	}
	return res, nil
}

func (r pageRelay) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	a, err := r.ask(ctx, &question{view: views.TryQuestion{Kind: views.QuestionRoots}})
	if err != nil {
		return nil, err
	}
	res := &mcp.ListRootsResult{Roots: []mcp.Root{}}
	for _, line := range strings.Split(a.Get("_roots"), "\n") {
		if u := strings.TrimSpace(line); u != "" {
			res.Roots = append(res.Roots, mcp.Root{URI: u})
		}
	}
	return res, nil
}

// Answer takes the person's answer to the question the Try it call
// callID waits on. A form's answer that its schema refuses is shown
// again with what is wrong, and the question keeps waiting. It reports
// whether a question was waiting.
func (s *Service) Answer(callID string, form url.Values) bool {
	s.qs.mu.Lock()
	q := s.qs.m[callID]
	s.qs.mu.Unlock()
	if q == nil {
		return false
	}
	if q.view.Kind == views.QuestionForm && form.Get("_action") != "decline" {
		if _, f, problems, ok := Check(q.schema, form); !ok {
			v := q.view
			v.Form, v.Error = f, "The answer is not right: "+strings.Join(append(problems, "see the fields below"), "; ")
			pageRelay{s: s, agent: v.AgentName, callID: callID}.publish(views.TryQuestionBox(v))
			return true
		}
	}
	select {
	case q.answer <- form:
	default: // answered already
	}
	return true
}

// contentText is a message's text, or what it holds if it is not text.
func contentText(c any) string {
	var t struct{ Type, Text string }
	b, _ := json.Marshal(c)
	_ = json.Unmarshal(b, &t)
	if t.Type == "text" || t.Text != "" {
		return t.Text
	}
	return "(" + t.Type + " content)"
}

func cutQuestion(s string) string {
	if len(s) > maxQuestionText {
		return strings.ToValidUTF8(s[:maxQuestionText], "") + "…"
	}
	return s
}
