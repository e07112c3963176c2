package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// Moving a catalog between backends (store.Dumper): a test with two
// backends fills one through the contract (Fill), copies it into the
// other (Copy), and checks the copy through the contract (CheckFilled).

// Secrets Fill stores, which a copy must hold as they are.
const (
	FilledEnvSecret    = "env-secret-value"
	FilledHeaderSecret = "Bearer header-secret-value"
	FilledOAuthSecret  = "oauth-client-secret"
	FilledAccessToken  = "grant-access-token"
	FilledRefreshToken = "grant-refresh-token"
)

// Fill fills st through the contract with something of everything a
// store keeps: a stdio server with env secrets, its launch confirmed,
// verified twice (tools and listed entries, one tool whose agent
// name had to be made safe, policies, a tool and an entry changed and
// approved, another left changed) and failed once; a remote server with
// a header secret, an OAuth client and a grant; calls; the MCP token; a
// profile with a connected client, another client; a browser session.
// It returns the MCP token.
func Fill(t *testing.T, st store.Store) (mcpToken string) {
	t.Helper()
	ctx := t.Context()
	files := StdioServer("files")
	files.Env = map[string]string{"API_KEY": FilledEnvSecret, "HOME": "/home/me"}
	files = MustCreate(t, st, files)
	if err := st.ConfirmLaunch(ctx, "files", files.LaunchHash(), ""); err != nil {
		t.Fatalf("ConfirmLaunch(files) = %v", err)
	}
	remote := MustCreate(t, st, store.Server{ID: "remote", Name: "Remote", Transport: store.TransportHTTP, URL: "https://mcp.example.com/mcp",
		Headers: map[string]string{"Authorization": FilledHeaderSecret}, DefaultPolicy: store.PolicyDeny, Enabled: true,
		OAuth: &store.OAuthClient{ClientID: "switchboard", ClientSecret: FilledOAuthSecret, Scopes: []string{"read"}}})

	v := Verification(files, "job-1", At(10), MkTool("read", "v1"), MkTool("write", "v1"), MkTool("a.b", "v1"))
	v.Listed = []store.Listed{mkListed(store.KindResource, "file:///readme", "v1"), mkListed(store.KindPrompt, "summarise", "v1")}
	MustRecordSuccess(t, st, "files", v)
	if _, err := st.SetPolicy(ctx, store.ToolRef{ServerID: "files", Tool: "read"}, store.PolicyAllow, "person"); err != nil {
		t.Fatalf("SetPolicy(files/read) = %v", err)
	}
	if _, err := st.SetListedPolicy(ctx, store.ListedRef{ServerID: "files", Kind: store.KindPrompt, Key: "summarise"}, store.PolicyDeny, "person"); err != nil {
		t.Fatalf("SetListedPolicy(files/summarise) = %v", err)
	}
	v = Verification(files, "job-2", At(20), MkTool("read", "v1"), MkTool("write", "v2"), MkTool("a.b", "v2"))
	v.Listed = []store.Listed{mkListed(store.KindResource, "file:///readme", "v2"), mkListed(store.KindPrompt, "summarise", "v1")}
	MustRecordSuccess(t, st, "files", v)
	write := MkTool("write", "v2")
	if _, err := st.ApproveTool(ctx, store.ToolRef{ServerID: "files", Tool: "write"}, write.Pin, "person"); err != nil {
		t.Fatalf("ApproveTool(files/write) = %v", err)
	}
	readme := mkListed(store.KindResource, "file:///readme", "v2")
	if _, err := st.ApproveListed(ctx, store.ListedRef{ServerID: "files", Kind: store.KindResource, Key: readme.Key}, readme.Pin, "person"); err != nil {
		t.Fatalf("ApproveListed(files/readme) = %v", err)
	}
	if err := st.RecordFailure(ctx, "files", Failure(files, "job-3", store.StatusTimeout, At(30))); err != nil {
		t.Fatalf("RecordFailure(files) = %v", err)
	}

	if err := st.SaveGrant(ctx, "remote", store.Grant{Issuer: "https://auth.example.com", TokenEndpoint: "https://auth.example.com/token",
		Resource: remote.URL, ClientID: "switchboard", ClientSecret: FilledOAuthSecret, AuthMethod: "client_secret_post",
		AccessToken: FilledAccessToken, RefreshToken: FilledRefreshToken, ExpiresAt: At(3600), SavedAt: At(40)}); err != nil {
		t.Fatalf("SaveGrant(remote) = %v", err)
	}
	calls := []store.Call{
		{At: At(50), Session: "s1", ServerID: "files", Tool: "read", AgentName: "files__read", Decision: store.DecisionAllowed, DecidedBy: "policy", Outcome: "ok"},
		{At: At(51), Session: "s1", ServerID: "files", Tool: "write", AgentName: "files__write", Decision: store.DecisionDenied, DecidedBy: "policy", Outcome: "refused"},
		{At: At(52), Session: "dashboard", ServerID: "remote", Tool: "search", AgentName: "remote__search", Decision: store.DecisionApproved, DecidedBy: "dashboard", Outcome: "ok", Arguments: `{"q":"x"}`},
	}
	if err := st.AppendCalls(ctx, calls); err != nil {
		t.Fatalf("AppendCalls = %v", err)
	}
	token, err := st.MCPToken(ctx)
	if err != nil {
		t.Fatalf("MCPToken = %v", err)
	}
	if err := st.CreateProfile(ctx, store.Profile{ID: "team", Name: "Team", Mode: store.ProfileServers, Servers: []string{"files"},
		Overrides: map[store.ToolRef]store.Policy{{ServerID: "files", Tool: "read"}: store.PolicyAsk}, CreatedAt: At(60)}); err != nil {
		t.Fatalf("CreateProfile(team) = %v", err)
	}
	_, ct := store.NewClientToken("Claude Desktop", At(70))
	ct.Profile = "team"
	if err := st.AddClientToken(ctx, ct); err != nil {
		t.Fatalf("AddClientToken = %v", err)
	}
	_, ct = store.NewClientToken("Cursor", At(71))
	if err := st.AddClientToken(ctx, ct); err != nil {
		t.Fatalf("AddClientToken = %v", err)
	}
	_, sess := store.NewBrowserSession("Firefox", time.Now(), time.Hour)
	if err := st.CreateSession(ctx, sess); err != nil {
		t.Fatalf("CreateSession = %v", err)
	}
	if err := st.CreateUser(ctx, store.User{ID: "u-ann", Email: "ann@example.com", Role: store.RoleApprover, TokenHash: store.HashToken("sbu_ann"), CreatedAt: At(72)}); err != nil {
		t.Fatalf("CreateUser = %v", err)
	}
	return token
}

// Copy dumps from, loads the dump into to, dumps to again and checks
// that the two dumps are equal. It returns the dump.
func Copy(t *testing.T, from, to store.Dumper) *store.Dump {
	t.Helper()
	ctx := t.Context()
	d, err := from.Dump(ctx)
	if err != nil {
		t.Fatalf("Dump() of the source = %v", err)
	}
	if err := to.Load(ctx, d); err != nil {
		t.Fatalf("Load() = %v; want nil", err)
	}
	again, err := to.Dump(ctx)
	if err != nil {
		t.Fatalf("Dump() of the copy = %v", err)
	}
	for _, diff := range d.Diff(again) {
		t.Errorf("the copy's dump differs from the source's: %s", diff)
	}
	return d
}

// CheckFilled checks through the contract that st holds what Fill put in
// the store whose MCP token was mcpToken, secrets and agent names
// included, and that it goes on working: a new verification of a copied
// server appends to its history after the copied entries.
func CheckFilled(t *testing.T, st store.Store, mcpToken string) {
	t.Helper()
	ctx := t.Context()
	files, err := st.Server(ctx, "files")
	if err != nil || files.Env["API_KEY"] != FilledEnvSecret || !files.LaunchConfirmedNow() {
		t.Errorf("Server(files) = env secret kept %v, launch confirmed %v, %v; want the secret and the confirmation", files.Env["API_KEY"] == FilledEnvSecret, files.LaunchConfirmedNow(), err)
	}
	remote, err := st.Server(ctx, "remote")
	if err != nil || remote.Headers["Authorization"] != FilledHeaderSecret || remote.OAuthSettings().ClientSecret != FilledOAuthSecret {
		t.Errorf("Server(remote) = header and OAuth secrets kept %v, %v, %v; want both", remote.Headers["Authorization"] == FilledHeaderSecret, remote.OAuthSettings().ClientSecret == FilledOAuthSecret, err)
	}
	if g, ok, err := st.Grant(ctx, "remote", "https://auth.example.com"); err != nil || !ok || g.AccessToken != FilledAccessToken || g.RefreshToken != FilledRefreshToken {
		t.Errorf("Grant(remote) = tokens kept %v, found %v, %v; want the grant's tokens", g.AccessToken == FilledAccessToken && g.RefreshToken == FilledRefreshToken, ok, err)
	}
	if got, err := st.MCPToken(ctx); err != nil || got != mcpToken {
		t.Errorf("MCPToken() = the source's %v, %v; want the source's", got == mcpToken, err)
	}
	for name, agent := range AgentNames(t, st, "files") {
		if name == "a.b" && agent == "files__a_b" {
			t.Errorf("agent name of a.b = %q; want the safe form with its hash", agent)
		}
	}
	tools := MustTools(t, st, "files")
	if e := tools["read"]; e.Effective != store.PolicyAllow {
		t.Errorf("files/read effective policy = %q; want allow", e.Effective)
	}
	if e, approved, err := st.ToolVersions(ctx, store.ToolRef{ServerID: "files", Tool: "a.b"}); err != nil || e.State != store.ToolChanged || approved == nil || approved.Pin != MkTool("a.b", "v1").Pin {
		t.Errorf("ToolVersions(files/a.b) = state %q, approved %v, %v; want changed, with the v1 definition approved", e.State, approved != nil, err)
	}
	if us, err := st.Users(ctx); err != nil || len(us) != 1 || us[0].Role != store.RoleApprover || us[0].TokenHash != store.HashToken("sbu_ann") {
		t.Errorf("Users() = %+v, %v; want ann, approver, her token's hash", us, err)
	}
	if cts, err := st.ClientTokens(ctx); err != nil || len(cts) != 2 || cts[0].Profile != "team" {
		t.Errorf("ClientTokens() = %d, %v; want 2, the first of profile team", len(cts), err)
	}
	if err := st.DeleteProfile(ctx, "team"); !errors.Is(err, store.ErrProfileInUse) {
		t.Errorf("DeleteProfile(team) = %v; want ErrProfileInUse", err)
	}
	calls, total, err := st.Calls(ctx, 10)
	if err != nil || total != 3 || len(calls) != 3 || calls[0].Seq != 3 {
		t.Fatalf("Calls(10) = %d calls of %d, %v; want 3, the newest numbered 3", len(calls), total, err)
	}
	if err := st.AppendCalls(ctx, []store.Call{{At: At(80), ServerID: "files", Tool: "read"}}); err != nil {
		t.Fatal(err)
	}
	if calls, _, err := st.Calls(ctx, 1); err != nil || calls[0].Seq != 4 {
		t.Errorf("the call appended after the copy = %+v, %v; want number 4", calls, err)
	}
	history, total, err := st.History(ctx, "files", 0)
	if err != nil || total != 3 {
		t.Fatalf("History(files) = %d entries, %v; want 3", total, err)
	}
	files, _ = st.Server(ctx, "files")
	if err := st.RecordFailure(ctx, "files", Failure(files, "job-4", store.StatusFailed, At(90))); err != nil {
		t.Fatal(err)
	}
	if e, err := st.JobHistory(ctx, "files", "job-4"); err != nil || e.Seq != history[0].Seq+1 {
		t.Errorf("JobHistory(files, job-4) = seq %d, %v; want %d", e.Seq, err, history[0].Seq+1)
	}
}

// CheckLoadRefused checks that Load into dst, which holds something,
// fails with store.ErrNotEmpty and leaves dst as it was.
func CheckLoadRefused(t *testing.T, d *store.Dump, dst store.Dumper) {
	t.Helper()
	ctx := t.Context()
	before, err := dst.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.Load(ctx, d); !errors.Is(err, store.ErrNotEmpty) {
		t.Fatalf("Load() into a store that holds %s = %v; want ErrNotEmpty", before.Holds(), err)
	}
	after, err := dst.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, diff := range before.Diff(after) {
		t.Errorf("the refused Load changed the store: %s", diff)
	}
}
