package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// A 2026-07-28 server asks in its answer: a tools/call, prompts/get or
// resources/read result of resultType input_required carries every
// question it has (inputRequests, each under a key of its own) and an
// opaque requestState, and the client retries the request with the
// answers under the same keys. mcp-go's client answers them itself, one
// handler call per question, which loses the keys and the questions'
// being asked together. A relay that can take them whole (an InputRelay:
// Switchboard's, for an agent that answers input_required itself) gets
// them whole instead: the transport answers the server's input_required
// before mcp-go sees it (see sendAnswering), and mcp-go gets the retry's
// final answer.

// InputRelay is a Relay that answers a 2026-07-28 server's questions
// together, under the server's own keys.
type InputRelay interface {
	Relay
	// Input answers reqs. The answers are the agent's, under the keys
	// of reqs; an error ends the request to the server.
	Input(ctx context.Context, reqs mcp.InputRequests) (mcp.InputResponses, error)
}

// AnswerEach answers reqs through r's methods, each question at the same
// time as the others (as mcp-go's client does). The first failure ends
// the others and is the error.
func AnswerEach(ctx context.Context, r Relay, reqs mcp.InputRequests) (mcp.InputResponses, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		answers  = make(mcp.InputResponses, len(reqs))
		firstErr error
	)
	for key, req := range reqs {
		wg.Go(func() {
			res, err := answerOne(ctx, r, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("answering the server's request %q: %w", key, err)
					cancel()
				}
				return
			}
			answers[key] = res
		})
	}
	wg.Wait()
	return answers, firstErr
}

// answerOne answers one question through r.
func answerOne(ctx context.Context, r Relay, req mcp.InputRequest) (mcp.InputResponse, error) {
	switch {
	case req.Method == mcp.MethodElicitationCreate && req.Elicitation != nil:
		res, err := r.Elicit(ctx, mcp.ElicitationRequest{Request: mcp.Request{Method: string(req.Method)}, Params: *req.Elicitation})
		if err != nil || res == nil {
			return mcp.InputResponse{}, cmpErr(err, "no answer")
		}
		return mcp.NewElicitationInputResponse(*res), nil
	case req.Method == mcp.MethodSamplingCreateMessage && req.Sampling != nil:
		res, err := r.CreateMessage(ctx, mcp.CreateMessageRequest{Request: mcp.Request{Method: string(req.Method)}, CreateMessageParams: *req.Sampling})
		if err != nil || res == nil {
			return mcp.InputResponse{}, cmpErr(err, "no answer")
		}
		return mcp.NewSamplingInputResponse(*res), nil
	case req.Method == mcp.MethodListRoots:
		res, err := r.ListRoots(ctx, mcp.ListRootsRequest{Request: mcp.Request{Method: string(req.Method)}})
		if err != nil || res == nil {
			return mcp.InputResponse{}, cmpErr(err, "no answer")
		}
		if res.Roots == nil {
			res.Roots = []mcp.Root{} // an array, as the schema has it
		}
		return mcp.NewRootsInputResponse(*res), nil
	}
	return mcp.InputResponse{}, fmt.Errorf("a request of method %q cannot be answered", req.Method)
}

// cmpErr is err, or an error saying what if err is nil.
func cmpErr(err error, what string) error {
	if err != nil {
		return err
	}
	return errors.New(what)
}

// maxInputRounds bounds the rounds of questions of one request (mcp-go's
// client has the same bound), maxInputQuestions the questions of one
// round, and maxRetryLater the rounds in a row that ask nothing (the
// server shedding load: "retry later").
const (
	maxInputRounds    = 10
	maxInputQuestions = 32
	maxRetryLater     = 3
)

// askingMethods are the requests a server may answer with input_required.
var askingMethods = map[string]bool{
	string(mcp.MethodToolsCall): true, string(mcp.MethodPromptsGet): true, string(mcp.MethodResourcesRead): true,
}

// retries numbers the requests sendAnswering sends again, for ids of
// their own (mcp-go's client numbers its own from 1, as integers).
var retries atomic.Uint64

// sendAnswering sends req (see sendDiscover); while its answer is a
// 2026-07-28 server's input_required and ctx has an InputRelay, the
// relay answers the questions and req is sent again with the answers
// and the server's requestState, under an id of its own. What comes back
// last is the answer. cancel, if not nil, tells the server a request
// sent again is cancelled, when ctx ends before its answer (over stdio,
// where nothing else would: mcp-go's client cancels only the request it
// sent, answered long before).
//
// network names the transport in the request's span (see traceRequest).
func sendAnswering(ctx context.Context, send sendFunc, cancel func(mcp.RequestId), req transport.JSONRPCRequest, network string) (resp *transport.JSONRPCResponse, err error) {
	ctx, req, span := traceRequest(ctx, req, network)
	defer func() { endRequest(span, resp, err) }()
	resp, err = sendDiscover(ctx, send, req)
	if err != nil || !askingMethods[req.Method] {
		return resp, err
	}
	r, ok := relayOf(ctx).(InputRelay)
	if !ok {
		return resp, nil // mcp-go's client answers, with its handlers
	}
	later := 0
	for round := 1; ; round++ {
		reqs, state, asks := inputRequired(resp)
		switch {
		case !asks:
			return resp, nil
		case round > maxInputRounds:
			return nil, fmt.Errorf("the server asked for input more than %d times in one request", maxInputRounds)
		case len(reqs) > maxInputQuestions:
			return nil, fmt.Errorf("the server asked %d questions at once (Switchboard relays %d at most)", len(reqs), maxInputQuestions)
		}
		var answers mcp.InputResponses
		if len(reqs) == 0 { // "retry later", not a question
			if later++; later > maxRetryLater {
				return nil, fmt.Errorf("the server asked to retry %d times in a row without asking anything", later)
			}
		} else {
			later = 0
			if answers, err = r.Input(ctx, reqs); err != nil {
				return nil, err
			}
		}
		retry, err := withAnswers(req, answers, state)
		if err != nil {
			return nil, err
		}
		if resp, err = send(ctx, retry); err != nil {
			if ctx.Err() != nil && cancel != nil {
				cancel(retry.ID)
			}
			return nil, err
		}
	}
}

// inputRequired is what resp asks, if it is an input_required result.
func inputRequired(resp *transport.JSONRPCResponse) (reqs mcp.InputRequests, state string, asks bool) {
	if resp == nil || resp.Error != nil {
		return nil, "", false
	}
	var res struct {
		ResultType mcp.ResultType `json:"resultType"`
		mcp.MultiRoundTripResult
	}
	if json.Unmarshal(resp.Result, &res) != nil || res.ResultType != mcp.ResultTypeInputRequired {
		return nil, "", false
	}
	return res.InputRequests, res.RequestState, true
}

// withAnswers is req again, with answers and the server's state, under an
// id of its own.
func withAnswers(req transport.JSONRPCRequest, answers mcp.InputResponses, state string) (transport.JSONRPCRequest, error) {
	raw, err := json.Marshal(req.Params)
	if err != nil {
		return req, err
	}
	var params map[string]any
	if err := json.Unmarshal(raw, &params); err != nil {
		return req, err
	}
	if params == nil {
		params = map[string]any{}
	}
	delete(params, "inputResponses")
	if answers != nil {
		params["inputResponses"] = answers
	}
	delete(params, "requestState")
	if state != "" {
		params["requestState"] = state
	}
	req.Params = params
	req.ID = mcp.NewRequestId("sb-retry-" + strconv.FormatUint(retries.Add(1), 10))
	return req, nil
}
