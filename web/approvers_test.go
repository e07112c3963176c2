package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
)

// A profile may name the only people who answer its clients' calls
// (issue 38): another approver is refused, naming them; a named one
// answers; and such calls are never answered in the agent's own client.
func TestAProfilesNamedApproversAloneAnswerItsCalls(t *testing.T) {
	e := newEnv(t)
	e.verifyFixture("fx", "-tools", "2")
	e.setPolicy("fx", "tool_000", "ask")
	tokens := map[string]string{}
	for _, who := range []string{"ann", "bob"} {
		rec := e.api(http.MethodPost, "/api/v1/users", map[string]any{"email": who + "@example.com", "role": "approver"})
		wantStatus(t, rec, http.StatusCreated)
		var made struct {
			Token string `json:"token"`
		}
		json.Unmarshal(rec.Body.Bytes(), &made)
		tokens[who] = made.Token
		e.secrets = append(e.secrets, made.Token)
	}
	rec := e.api(http.MethodPost, "/api/v1/profiles", map[string]any{"id": "ops", "name": "Ops", "mode": "all", "approvers": []string{"ANN@example.com", "not an email"}})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if !strings.Contains(rec.Body.String(), "approvers") {
		t.Errorf("a bad approver's refusal: %s", rec.Body.String())
	}
	wantStatus(t, e.api(http.MethodPost, "/api/v1/profiles", map[string]any{"id": "ops", "name": "Ops", "mode": "all", "approvers": []string{"ANN@example.com"}}), http.StatusCreated)
	rec = e.api(http.MethodPost, "/api/v1/clients", map[string]any{"name": "Ops agent", "profile": "ops"})
	wantStatus(t, rec, http.StatusCreated)
	var client struct {
		Client struct {
			ApprovalsInClient bool `json:"approvals_in_client"`
		} `json:"client"`
		Token string `json:"token"`
	}
	json.Unmarshal(rec.Body.Bytes(), &client)
	e.secrets = append(e.secrets, client.Token)
	if client.Client.ApprovalsInClient {
		t.Error("a profile with named approvers lets its calls be answered in the agent's client")
	}

	e.apiWith(tokens["bob"], http.MethodGet, "/api/v1/approvals", "") // someone who may answer is here
	srv, _ := e.liveServer()
	agent := mcptest.Connect(t, srv.URL, client.Token)
	done := make(chan error, 1)
	go func() { done <- mcptest.Refused(agent.Call("fx__tool_000", map[string]any{})) }()
	id := e.waitApproval()
	rec = e.apiWith(tokens["bob"], http.MethodPost, "/api/v1/approvals/"+id, `{"decision": "allow_once"}`)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "ann@example.com") {
		t.Errorf("bob's answer = %d %s; want 403 naming ann", rec.Code, rec.Body.String())
	}
	wantStatus(t, e.apiWith(tokens["ann"], http.MethodPost, "/api/v1/approvals/"+id, `{"decision": "allow_once"}`), http.StatusOK)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the call ann approved = %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the call ann approved still waits")
	}
	if got := e.waitCall(1); got.DecidedBy != "ann@example.com" {
		t.Errorf("decided by %q; want ann@example.com", got.DecidedBy)
	}
}
