package main

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// -conformance serves the test tools the MCP conformance suite's server
// scenarios call by name (tools-call-*, elicitation-sep1034-defaults,
// elicitation-sep1330-enums, the SEP-2322 input-required-result-*, and
// two of server-stateless's diagnostic tools), and the prompt
// test_input_required_result_prompt, each answering as the suite's own
// reference server (examples/servers/typescript/everything-server.ts in
// the conformance repository) does: so that a client, or a gateway in
// front of this server, can be held to those scenarios.
//
// What a tool asks of its client it asks as a 2026-07-28 server does,
// with an input_required result answered on the call's retry; mcp-go
// asks a client of an earlier revision the same as requests of its own
// during the call, and calls the handler again with the answers (see
// asks_tools.go). So one handler serves the scenarios of both eras.
//
// Left out are the tools that need the server itself to be special (an
// HTTP status of its own, a stream it closes, a list it changes):
// test_missing_capability, test_trigger_tool_change,
// test_trigger_prompt_change and test_reconnection; and the tasks
// extension's tools. test_streaming_elicitation, which the reference
// server answers with a progress notification, asks for a form here: what
// server-stateless checks of it, that a 2026-07-28 request's stream holds
// no request of the server's, then says something of a gateway that
// relays the question.
//
// With -tools-file, the file's watcher serves exactly the file's tools
// once the file changes: these go then.

// The suite's test media: a 1×1 PNG and a WAV file without samples, as
// the reference server sends them.
const (
	conformancePNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	conformanceWAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

// conformanceOptions declare what the tools use besides tools: log
// messages, prompts for test_input_required_result_prompt, and resources
// with subscriptions for test://watched-resource.
var conformanceOptions = []server.ServerOption{server.WithLogging(), server.WithPromptCapabilities(true), server.WithResourceCapabilities(true, true)}

// addConformance adds the suite's test tools, prompt and watched resource
// (which resources-subscribe and resources-unsubscribe subscribe to) to s
// (made with conformanceOptions).
func addConformance(s *server.MCPServer) {
	s.AddResource(mcp.NewResource("test://watched-resource", "watched-resource",
		mcp.WithResourceDescription("A resource to subscribe to."), mcp.WithMIMEType("text/plain")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "Watched resource content"}}, nil
		})
	s.AddTools(conformanceTools()...)
	s.AddTools(taskTools()...)
	s.AddPrompt(mcp.NewPrompt("test_input_required_result_prompt",
		mcp.WithPromptDescription("Asks the person for the prompt's context (input_required), and answers a prompt with it.")),
		inputRequiredPrompt)
}

// conformanceTools returns the suite's test tools with their handlers.
func conformanceTools() []server.ServerTool {
	text := func(s string) server.ToolHandlerFunc {
		return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(s), nil
		}
	}
	contents := func(c ...mcp.Content) server.ToolHandlerFunc {
		return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: c}, nil
		}
	}
	tool := func(name, description string, h server.ToolHandlerFunc, opts ...mcp.ToolOption) server.ServerTool {
		return server.ServerTool{Tool: mcp.NewTool(name, append([]mcp.ToolOption{mcp.WithDescription(description)}, opts...)...), Handler: h}
	}
	return []server.ServerTool{
		// What a call answers: tools-call-simple-text, -image, -audio,
		// -embedded-resource, -mixed-content and -error.
		tool("test_simple_text", "Tests simple text content response", text("This is a simple text response for testing.")),
		tool("test_image_content", "Tests image content response", contents(mcp.NewImageContent(conformancePNG, "image/png"))),
		tool("test_audio_content", "Tests audio content response", contents(mcp.NewAudioContent(conformanceWAV, "audio/wav"))),
		tool("test_embedded_resource", "Tests embedded resource content response", contents(mcp.NewEmbeddedResource(mcp.TextResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."}))),
		tool("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)", contents(
			mcp.NewTextContent("Multiple content types test:"),
			mcp.NewImageContent(conformancePNG, "image/png"),
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json",
				Text: `{"test":"data","value":123}`}))),
		tool("test_error_handling", "Tests error response handling", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("This tool intentionally returns an error for testing"), nil
		}),

		// What a server tells during a call: tools-call-with-logging,
		// tools-call-with-progress, and server-stateless's check that a
		// 2026-07-28 request that asked for no log level gets no log
		// message.
		tool("test_tool_with_logging", "Tests tool that emits log messages during execution", toolWithLogging),
		tool("test_tool_with_progress", "Tests tool that reports progress notifications", toolWithProgress),
		tool("test_logging_tool", "Diagnostic logging validator tool: sends a log message at info, which a client gets only if it asked for one", loggingTool),

		// What a server asks during a call, as a 2025-era client is asked:
		// tools-call-sampling, tools-call-elicitation,
		// elicitation-sep1034-defaults and elicitation-sep1330-enums; and
		// server-stateless's check that a 2026-07-28 request's stream
		// carries no request of the server's.
		tool("test_sampling", "Tests server-initiated sampling (LLM completion request)", sampling,
			mcp.WithString("prompt", mcp.Required(), mcp.Description("The prompt to send to the LLM"))),
		tool("test_elicitation", "Tests server-initiated elicitation (user input request)", elicitation,
			mcp.WithString("message", mcp.Required(), mcp.Description("The message to show the user"))),
		tool("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034",
			elicitForm("Please review and update the form fields with defaults", sep1034Schema)),
		tool("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330",
			elicitForm("Please select options from the enum fields", sep1330Schema)),
		tool("test_streaming_elicitation", "Asks the person for a response (elicitation), and answers what they gave",
			elicitForm("Please respond", responseSchema)),

		// SEP-2322's multi round-trip requests: input-required-result-*.
		tool("test_input_required_result_elicitation", "MRTR: returns InputRequiredResult with elicitation request", inputRequiredElicitation),
		tool("test_input_required_result_sampling", "MRTR: returns InputRequiredResult with sampling request", inputRequiredSampling),
		tool("test_input_required_result_list_roots", "MRTR: returns InputRequiredResult with roots/list request", inputRequiredRoots),
		tool("test_input_required_result_request_state", "MRTR: returns InputRequiredResult with requestState", inputRequiredRequestState),
		tool("test_input_required_result_multiple_inputs", "MRTR: returns InputRequiredResult with multiple input requests", inputRequiredMultiple),
		tool("test_input_required_result_multi_round", "MRTR: multi-round InputRequiredResult workflow", inputRequiredMultiRound),
		tool("test_input_required_result_tampered_state", "MRTR: HMAC-signed requestState integrity test", inputRequiredTamperedState),
		tool("test_input_required_result_capabilities", "MRTR: respects client capabilities in inputRequests", inputRequiredCapabilities),
	}
}

// test_tool_with_logging and test_tool_with_progress send more
// notifications than the three the suite's reference server sends and
// its checks want (four log messages, five steps of progress): the last
// notification a call sends just before its result may not reach the
// client through a gateway built on mcp-go's Streamable HTTP server
// (v1.2.1 drops a notification its per-request writer took off the queue
// as the handler returned: Switchboard's /mcp loses the last relayed one
// now and then). The checks hold a gateway to relaying what comes during
// the call, whatever becomes of that last one.

// logStart is how long test_tool_with_logging works before its first log
// message. A log message names no request, so a gateway that passes
// them on to the request in flight (Switchboard) drops those that come
// just after another request on the session ended (250 ms), which might
// be theirs; the tool's must never look so.
const logStart = 400 * time.Millisecond

func toolWithLogging(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s := server.ServerFromContext(ctx)
	if err := pause(ctx, logStart); err != nil {
		return nil, err
	}
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool processed data", "Tool execution completed"} {
		if i > 0 {
			// The suite's reference server pauses between its messages,
			// so that a client must take several during one call.
			if err := pause(ctx, 50*time.Millisecond); err != nil {
				return nil, err
			}
		}
		_ = s.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "mcp-fixture", msg))
	}
	flushed(ctx)
	return mcp.NewToolResultText("Tool with logging executed successfully"), nil
}

func toolWithProgress(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var token mcp.ProgressToken
	if m := req.Params.Meta; m != nil {
		token = m.ProgressToken
	}
	if token == nil {
		return mcp.NewToolResultText("no progress token"), nil
	}
	s := server.ServerFromContext(ctx)
	for i, progress := range []int{0, 25, 50, 75, 100} {
		if i > 0 {
			if err := pause(ctx, 50*time.Millisecond); err != nil {
				return nil, err
			}
		}
		_ = s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
			"progressToken": token, "progress": progress, "total": 100, "message": fmt.Sprintf("Completed step %d of 100", progress)})
	}
	flushed(ctx)
	return mcp.NewToolResultText(fmt.Sprint(token)), nil
}

func loggingTool(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// mcp-go sends it only to a client that asked for log messages at
	// info or below (logging/setLevel, or the request's logLevel).
	_ = server.ServerFromContext(ctx).SendLogMessageToClient(ctx,
		mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "mcp-fixture", "Diagnostic trace logging activated"))
	flushed(ctx)
	return mcp.NewToolResultText("Logging evaluated"), nil
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// flushMarker is the method of flushed's marker, a notification no
// client acts on.
const flushMarker = "notifications/fixture/flushed"

// flushWait bounds flushed's wait: a transport whose queue is read
// elsewhere, or not at all, never empties it.
const flushWait = 2 * time.Second

// flushed waits until mcp-go has written the notifications a handler
// sent, so that they reach the client before the result. mcp-go's stdio
// server writes notifications from a goroutine of its own, which takes
// them from the session's queue one at a time, and the result from the
// handler's: the last notification could follow the result, and then
// reach a client that no longer has the request in flight. flushed
// queues a marker behind them and waits until the queue is empty: the
// writer took the marker, so it has written everything queued before it.
func flushed(ctx context.Context) {
	s, cs := server.ServerFromContext(ctx), server.ClientSessionFromContext(ctx)
	if s == nil || cs == nil || s.SendNotificationToClient(ctx, flushMarker, nil) != nil {
		return
	}
	queue := cs.NotificationChannel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(flushWait)
	for len(queue) > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// clientCaps are the capabilities the client declared: a 2026-07-28
// request's own, or a session's at initialize.
func clientCaps(ctx context.Context) mcp.ClientCapabilities {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		if info.ClientCapabilities != nil {
			return *info.ClientCapabilities
		}
		return mcp.ClientCapabilities{}
	}
	if cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		return cs.GetClientCapabilities()
	}
	return mcp.ClientCapabilities{}
}

// sampledText is the text of a model's message, "" if it has none. The
// content arrives decoded as the transport left it (a TextContent, or a
// map): its text is read from its JSON.
func sampledText(res *mcp.CreateMessageResult) string {
	var text struct{ Text string }
	raw, _ := json.Marshal(res.Content)
	_ = json.Unmarshal(raw, &text)
	return text.Text
}

// answered is the string field of an accepted elicitation's content,
// "unknown" if there is none, as the reference server reads it.
func answered(res *mcp.ElicitationResult, field string) string {
	if res != nil {
		if content, ok := res.Content.(map[string]any); ok {
			if v, ok := content[field].(string); ok {
				return v
			}
		}
	}
	return "unknown"
}

// elicited is an elicitation's answer as the reference server reports
// it: its action and its content's JSON.
func elicited(res *mcp.ElicitationResult) string {
	content := res.Content
	if content == nil {
		content = map[string]any{}
	}
	raw, _ := json.Marshal(content)
	return fmt.Sprintf("action=%s, content=%s", res.Action, raw)
}

func sampling(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if res := server.SamplingResponse(req.Params.InputResponses, "llm"); res != nil {
		return mcp.NewToolResultText("LLM response: " + cmp.Or(sampledText(res), "No response")), nil
	}
	if clientCaps(ctx).Sampling == nil {
		return mcp.NewToolResultError("Sampling not supported: the client declared no sampling capability"), nil
	}
	return server.NewInputRequestBuilder("").Sample("llm", mcp.CreateMessageParams{
		Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(req.GetString("prompt", ""))}},
		MaxTokens: 100,
	}).ToolResult(), nil
}

func elicitation(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if res := server.ElicitationResponse(req.Params.InputResponses, "response"); res != nil {
		return mcp.NewToolResultText("User response: " + elicited(res)), nil
	}
	if clientCaps(ctx).Elicitation == nil {
		return mcp.NewToolResultError("Elicitation not supported: the client declared no elicitation capability"), nil
	}
	return server.NewInputRequestBuilder("").Elicit("response", mcp.ElicitationParams{
		Message: req.GetString("message", ""), RequestedSchema: responseSchema}).ToolResult(), nil
}

// elicitForm is a tool that asks the person to fill in schema, and
// answers what they did.
func elicitForm(message string, schema json.RawMessage) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if res := server.ElicitationResponse(req.Params.InputResponses, "form"); res != nil {
			return mcp.NewToolResultText("Elicitation completed: " + elicited(res)), nil
		}
		if clientCaps(ctx).Elicitation == nil {
			return mcp.NewToolResultError("Elicitation not supported: the client declared no elicitation capability"), nil
		}
		return server.NewInputRequestBuilder("").Elicit("form", mcp.ElicitationParams{Message: message, RequestedSchema: schema}).ToolResult(), nil
	}
}

// The forms the tools ask for, as the reference server words them.
var (
	responseSchema = json.RawMessage(`{"type":"object","properties":{"response":{"type":"string","description":"User's response"}},"required":["response"]}`)
	// sep1034Schema has a default for each primitive type.
	sep1034Schema = json.RawMessage(`{"type":"object","properties":{
		"name":{"type":"string","description":"User name","default":"John Doe"},
		"age":{"type":"integer","description":"User age","default":30},
		"score":{"type":"number","description":"User score","default":95.5},
		"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
		"verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}`)
	// sep1330Schema has each of the five kinds of enum.
	sep1330Schema = json.RawMessage(`{"type":"object","properties":{
		"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},
		"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[
			{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
		"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
		"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},
		"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[
			{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},"required":[]}`)
)

// formOf is a form asking for one string field, required.
func formOf(field string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%q:{"type":"string"}},"required":[%q]}`, field, field))
}

// confirmForm asks for a boolean ok.
var confirmForm = json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)

// The SEP-2322 tools. Each asks (input_required) until the call comes
// with the answers it needs; a call with answers it did not ask for, or
// with others besides, is answered as one without them, or as one with
// them, the others ignored, as SEP-2322 wants.

func inputRequiredElicitation(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if res := server.ElicitationResponse(req.Params.InputResponses, "user_name"); res != nil {
		return mcp.NewToolResultText(fmt.Sprintf("Hello, %s!", answered(res, "name"))), nil
	}
	return server.NewInputRequestBuilder("").Elicit("user_name", mcp.ElicitationParams{
		Message: "What is your name?", RequestedSchema: formOf("name")}).ToolResult(), nil
}

func inputRequiredSampling(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if res := server.SamplingResponse(req.Params.InputResponses, "sample_request"); res != nil {
		return mcp.NewToolResultText("Sampling result: " + cmp.Or(sampledText(res), "no response")), nil
	}
	return server.NewInputRequestBuilder("").Sample("sample_request", mcp.CreateMessageParams{
		Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("What is the capital of France?")}},
		MaxTokens: 100,
	}).ToolResult(), nil
}

func inputRequiredRoots(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if res := server.RootsResponse(req.Params.InputResponses, "roots_request"); res != nil {
		return mcp.NewToolResultText(fmt.Sprintf("Found %d root(s)", len(res.Roots))), nil
	}
	return server.NewInputRequestBuilder("").Roots("roots_request").ToolResult(), nil
}

// mrtrState is the requestState of the tools below: what kind of
// exchange it belongs to, the round it is at, and what the earlier
// rounds gave. The nonce makes each one new.
type mrtrState struct {
	Kind  string `json:"kind"`
	Round int    `json:"round,omitempty"`
	Name  string `json:"name,omitempty"`
	Nonce string `json:"nonce"`
}

// newState encodes a requestState of kind.
func newState(kind string, round int, name string) string {
	raw, _ := json.Marshal(mrtrState{Kind: kind, Round: round, Name: name, Nonce: rand.Text()})
	return string(raw)
}

// stateOf decodes a requestState, or returns the zero state.
func stateOf(s string) mrtrState {
	var st mrtrState
	_ = json.Unmarshal([]byte(s), &st)
	return st
}

func inputRequiredRequestState(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params.MultiRoundTripParams
	if res := server.ElicitationResponse(p.InputResponses, "confirm"); res != nil && stateOf(p.RequestState).Kind == "request-state" {
		if content, _ := res.Content.(map[string]any); content["ok"] == true {
			return mcp.NewToolResultText("state-ok: requestState validated"), nil
		}
	}
	return server.NewInputRequestBuilder(newState("request-state", 0, "")).Elicit("confirm", mcp.ElicitationParams{
		Message: "Please confirm", RequestedSchema: confirmForm}).ToolResult(), nil
}

func inputRequiredMultiple(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params.MultiRoundTripParams
	name := server.ElicitationResponse(p.InputResponses, "user_name")
	greeting := server.SamplingResponse(p.InputResponses, "greeting")
	roots := server.RootsResponse(p.InputResponses, "client_roots")
	if name != nil && greeting != nil && roots != nil && stateOf(p.RequestState).Kind == "multiple-inputs" {
		return mcp.NewToolResultText(fmt.Sprintf("Name: %s; Greeting: %s; Roots: %d",
			answered(name, "name"), cmp.Or(sampledText(greeting), "Hello there!"), len(roots.Roots))), nil
	}
	return server.NewInputRequestBuilder(newState("multiple-inputs", 0, "")).
		Elicit("user_name", mcp.ElicitationParams{Message: "What is your name?", RequestedSchema: formOf("name")}).
		Sample("greeting", mcp.CreateMessageParams{
			Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("Generate a greeting")}},
			MaxTokens: 50,
		}).
		Roots("client_roots").ToolResult(), nil
}

func inputRequiredMultiRound(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params.MultiRoundTripParams
	st := stateOf(p.RequestState)
	if res := server.ElicitationResponse(p.InputResponses, "step1"); st.Kind == "multi-round" && st.Round == 1 && res != nil {
		return server.NewInputRequestBuilder(newState("multi-round", 2, answered(res, "name"))).Elicit("step2", mcp.ElicitationParams{
			Message: "Step 2: What is your favorite color?", RequestedSchema: formOf("color")}).ToolResult(), nil
	}
	if res := server.ElicitationResponse(p.InputResponses, "step2"); st.Kind == "multi-round" && st.Round == 2 && res != nil {
		return mcp.NewToolResultText(fmt.Sprintf("Multi-round complete for %s who likes %s", cmp.Or(st.Name, "friend"), answered(res, "color"))), nil
	}
	// A first call, or one that lost its way: start over.
	return server.NewInputRequestBuilder(newState("multi-round", 1, "")).Elicit("step1", mcp.ElicitationParams{
		Message: "Step 1: What is your name?", RequestedSchema: formOf("name")}).ToolResult(), nil
}

// stateKey signs the requestStates of the tools that check theirs; a new
// one each run.
var stateKey = []byte(rand.Text())

// signed is state with its signature appended.
func signed(state string) string {
	mac := hmac.New(sha256.New, stateKey)
	mac.Write([]byte(state))
	return state + "." + hex.EncodeToString(mac.Sum(nil))
}

// verified is the state a signed requestState carries, or an error if
// its signature does not hold.
func verified(s string) (mrtrState, error) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 || !hmac.Equal([]byte(signed(s[:i])), []byte(s)) {
		return mrtrState{}, errors.New("requestState integrity check failed")
	}
	return stateOf(s[:i]), nil
}

func inputRequiredTamperedState(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params.MultiRoundTripParams
	if p.RequestState != "" {
		st, err := verified(p.RequestState)
		if err != nil {
			// A JSON-RPC error, never a new question: the state is not
			// one this server gave.
			return nil, err
		}
		if _, ok := p.InputResponses["confirm"]; ok && st.Kind == "tamper-test" {
			return mcp.NewToolResultText("integrity-ok: state verified"), nil
		}
	}
	return server.NewInputRequestBuilder(signed(newState("tamper-test", 0, ""))).Elicit("confirm", mcp.ElicitationParams{
		Message: "Please confirm", RequestedSchema: confirmForm}).ToolResult(), nil
}

func inputRequiredCapabilities(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if responses := req.Params.InputResponses; len(responses) > 0 {
		keys := make([]string, 0, len(responses))
		for k := range responses {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return mcp.NewToolResultText("capabilities-ok: received " + strings.Join(keys, ",")), nil
	}
	// Only what the client declared it can answer is asked.
	caps := clientCaps(ctx)
	b := server.NewInputRequestBuilder(signed(newState("capabilities-test", 0, "")))
	asked := false
	if caps.Elicitation != nil {
		b.Elicit("elicit_input", mcp.ElicitationParams{Message: "Elicitation input", RequestedSchema: formOf("value")})
		asked = true
	}
	if caps.Sampling != nil {
		b.Sample("sample_input", mcp.CreateMessageParams{
			Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("Sample request")}},
			MaxTokens: 50,
		})
		asked = true
	}
	if !asked {
		return mcp.NewToolResultText("No supported capabilities declared"), nil
	}
	return b.ToolResult(), nil
}

// inputRequiredPrompt is test_input_required_result_prompt: SEP-2322 on a
// request other than a call (input-required-result-non-tool-request).
func inputRequiredPrompt(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	if res := server.ElicitationResponse(req.Params.InputResponses, "user_context"); res != nil {
		return mcp.NewGetPromptResult("A prompt with context", []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Prompt with context: "+answered(res, "context"))),
		}), nil
	}
	return server.NewInputRequestBuilder("").Elicit("user_context", mcp.ElicitationParams{
		Message: "What context should the prompt use?", RequestedSchema: formOf("context")}).PromptResult(), nil
}
