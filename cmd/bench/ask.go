//go:build linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/store"
)

// askFigures measures how fast a call to an ask tool reaches the person:
// from an agent's tools/call to its card on an open tab (the approvals
// event), and to the question in the agent's own client (elicitation).
// The baseline is a routed call of an allow tool of the same server, in
// the same run: the whole round trip a call costs when nobody is asked.
func askFigures(ctx context.Context, cfg *config) ([]figure, error) {
	a, err := startFreshApp(cfg, "mcp-ask", 2)
	if err != nil {
		return nil, err
	}
	defer a.close()
	const serverID = "askfix"
	if err := a.addServer(ctx, serverID, cfg.bins.fixtureCmd("-tools", "3")); err != nil {
		return nil, err
	}
	if _, err := a.verifyAll(ctx, []string{serverID}); err != nil {
		return nil, err
	}
	for tool, p := range map[string]store.Policy{"tool_000": store.PolicyAllow, "tool_001": store.PolicyAsk} {
		if err := a.api(ctx, http.MethodPut, "/api/v1/servers/"+serverID+"/tools/"+tool+"/policy", map[string]any{"policy": p}, http.StatusOK, nil); err != nil {
			return nil, err
		}
	}
	if err := a.login(ctx); err != nil {
		return nil, err
	}
	tab, err := a.openSSE(ctx, 1024)
	if err != nil {
		return nil, err
	}
	defer tab.close()
	plain, _, err := a.mcpClient(ctx)
	if err != nil {
		return nil, err
	}
	defer plain.Close()
	asked := make(chan time.Time, 1)
	// An agent whose client asks its person (elicitation), at once.
	asker, _, err := a.mcpClient(ctx, client.WithElicitationHandler(answerAt(func() { asked <- time.Now() })))
	if err != nil {
		return nil, err
	}
	defer asker.Close()

	runs := max(mcpRunsFor(cfg).calls/20, 2)
	call := func(c *client.Client, name, nonce string) error {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		args := map[string]any{"url": "https://example.com/" + nonce}
		_, err := c.CallTool(cctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: serverID + "__" + name, Arguments: args}})
		return err
	}
	var allow, card, question samples
	for i := -1; i < runs; i++ {
		t0 := time.Now()
		nonce := fmt.Sprintf("call-%d", i+1)
		if err := call(plain, "tool_000", nonce); err != nil {
			return nil, fmt.Errorf("allow call: %w", err)
		}
		dAllow := time.Since(t0)

		// The card: the call waits until the bench answers it.
		done := make(chan error, 1)
		t0 = time.Now()
		go func() { done <- call(plain, "tool_001", nonce) }()
		id, at, err := waitCard(ctx, tab, nonce)
		if err != nil {
			return nil, err
		}
		dCard := at.Sub(t0)
		if err := a.api(ctx, http.MethodPost, "/api/v1/approvals/"+id, map[string]any{"decision": "allow_once"}, http.StatusOK, nil); err != nil {
			return nil, err
		}
		if err := <-done; err != nil {
			return nil, fmt.Errorf("approved ask call: %w", err)
		}

		// The question in the agent's client, which answers at once.
		t0 = time.Now()
		if err := call(asker, "tool_001", nonce+"-asked"); err != nil {
			return nil, fmt.Errorf("ask call answered in the client: %w", err)
		}
		dQuestion := (<-asked).Sub(t0)
		if i >= 0 {
			allow, card, question = append(allow, dAllow), append(card, dCard), append(question, dQuestion)
		}
	}
	base := ms(allow.median())
	mk := func(name string, s samples) figure {
		f := figure{Name: name, Unit: "ms", Value: ms(s.median()), Baseline: "routed call of an allow tool", BaseVal: base, Target: "≤ +50 ms"}
		f.Ratio = f.Value / f.BaseVal
		f.Pass = f.Value-f.BaseVal <= 50
		f.Note = fmt.Sprintf("median of %d; p99 %.2f ms", len(s), ms(s.quantile(0.99)))
		return f
	}
	return []figure{
		mk("ask call → its card on an open tab (approvals event), p50", card),
		mk("ask call → the question in the agent's client (elicitation/create), p50", question),
	}, nil
}

var cardID = regexp.MustCompile(`data-approval="([0-9a-f]+)"`)

// waitCard waits for an approvals event with the card of the call whose
// arguments hold nonce, and returns the card's id and when the event
// arrived (earlier cards' events may still be on the way).
func waitCard(ctx context.Context, tab *sseConn, nonce string) (string, time.Time, error) {
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-tab.events:
			if !ok {
				return "", time.Time{}, fmt.Errorf("the tab's stream ended")
			}
			_, card, found := strings.Cut(ev.data, `data-testid="approval-card"`)
			if ev.name != "approvals" || !found || !strings.Contains(card, "example.com/"+nonce+"&") && !strings.Contains(card, "example.com/"+nonce+`"`) {
				continue
			}
			m := cardID.FindStringSubmatch(ev.data)
			if m == nil {
				return "", time.Time{}, fmt.Errorf("a card without its id: %.200s", ev.data)
			}
			return m[1], ev.at, nil
		case <-timeout:
			return "", time.Time{}, fmt.Errorf("no card within 10s")
		case <-ctx.Done():
			return "", time.Time{}, ctx.Err()
		}
	}
}

// answerAt is an elicitation handler that notes the question and allows.
type answerAt func()

func (f answerAt) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	f()
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"answer": "allow_once"}}}, nil
}
