//go:build linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/store"
)

// elicitingAgent answers every elicitation/create with the same form.
type elicitingAgent struct{}

func (elicitingAgent) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "bench"}}}, nil
}

// relayFigures times a call whose server asks the agent a question
// (the fixture's ask_person: an elicitation, answered by the agent, then
// the result) through /mcp, against the same round trip made directly to
// the fixture over stdio by the same kind of client: what relaying the
// question and its answer adds.
func relayFigures(ctx context.Context, cfg *config) ([]figure, error) {
	a, err := startFreshApp(cfg, "mcp-relay", 2)
	if err != nil {
		return nil, err
	}
	defer a.close()
	const serverID, toolName = "askfix", "ask_person"
	fixtureArgs := []string{"-mode", "asks", "-tools", "1"}
	if err := a.addServer(ctx, serverID, cfg.bins.fixtureCmd(fixtureArgs...)); err != nil {
		return nil, err
	}
	if _, err := a.verifyAll(ctx, []string{serverID}); err != nil { // confirms the launch
		return nil, err
	}
	if err := a.api(ctx, http.MethodPut, "/api/v1/servers/"+serverID+"/tools/"+toolName+"/policy",
		map[string]any{"policy": store.PolicyAllow}, http.StatusOK, nil); err != nil {
		return nil, err
	}
	answering := []client.ClientOption{
		client.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}}),
		client.WithElicitationHandler(elicitingAgent{}),
	}
	agent, _, err := a.mcpClient(ctx, answering...)
	if err != nil {
		return nil, err
	}
	defer agent.Close()
	direct, err := startDirectFixture(ctx, cfg.bins.fixture, fixtureArgs, answering...)
	if err != nil {
		return nil, err
	}
	defer direct.Close()

	const want = `accept {"name":"bench"}`
	call := func(c *client.Client, name string) (time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		t0 := time.Now()
		res, err := c.CallTool(cctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name}})
		d := time.Since(t0)
		if err != nil {
			return 0, fmt.Errorf("tools/call %s: %w", name, err)
		}
		if text := resultText(res); res.IsError || text != want {
			return 0, fmt.Errorf("tools/call %s: error %v, %q; want %q", name, res.IsError, text, want)
		}
		return d, nil
	}
	agentName := serverID + "__" + toolName
	cold, err := call(agent, agentName) // starts the upstream
	if err != nil {
		return nil, err
	}
	sides := []func() (time.Duration, error){
		func() (time.Duration, error) { return call(agent, agentName) },
		func() (time.Duration, error) { return call(direct, toolName) },
	}
	runs := mcpRunsFor(cfg).calls / 2
	took, err := alternate(sides, runs)
	if err != nil {
		return nil, err
	}
	via, bare := took[0], took[1]
	f := figure{
		Name: "a call whose server asks the agent (elicitation round trip) via /mcp, p50", Unit: "ms",
		Value: ms(via.median()), Baseline: "the same round trip, direct stdio mcp-go client", BaseVal: ms(bare.median()),
		Target: "≤ +1 ms",
	}
	f.Ratio = f.Value / f.BaseVal
	f.Pass = f.Value-f.BaseVal <= 1
	f.Note = fmt.Sprintf("+%.2f ms; median of %d each; p99 %.2f ms vs %.2f ms; first call (starts the upstream) %.0f ms",
		f.Value-f.BaseVal, runs, ms(via.quantile(0.99)), ms(bare.quantile(0.99)), ms(cold))
	return []figure{f}, nil
}
