package present

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
	"github.com/switchboard-dev/switchboard/store"
)

// aLinux is a machine that builds every wall.
var aLinux = sandbox.Machine{OS: "linux", Landlock: 7, UserNS: true}

// A page never gets a secret value: the edit form and the launch say a
// value is set, by key, without it.
func TestSecretsStayOut(t *testing.T) {
	srv := store.Server{ID: "s", Transport: store.TransportStdio, Command: "files-mcp", Args: []string{"--root", "/tmp x"},
		Env: map[string]string{"B_KEY": "s3cret-b", "A_KEY": "s3cret-a"}, Enabled: true}
	f := ServerForm(srv)
	l := Launch(srv, aLinux)
	for _, shown := range []string{strings.Join(l.EnvKeys, " "), l.CommandLine, f.Args} {
		if strings.Contains(shown, "s3cret") {
			t.Errorf("a secret value is shown: %q", shown)
		}
	}
	if len(f.Env) != 2 || f.Env[0].Key != "A_KEY" || !f.Env[0].Set {
		t.Errorf("form env rows = %+v; want keys in order, marked set (a KV has no value field at all)", f.Env)
	}
	if !slices.Equal(l.EnvKeys, []string{"A_KEY", "B_KEY"}) || l.Hash != srv.LaunchHash() {
		t.Errorf("launch = %+v", l)
	}
}

// A flagged tool has no name agents know it by; a tool's annotations are
// listed in key order with their JSON values; its reason is shown.
func TestToolItem(t *testing.T) {
	e := store.ToolEntry{Tool: store.Tool{Name: "rm", AgentName: "s__rm", State: store.ToolUnsupported,
		Annotations: json.RawMessage(`{"readOnlyHint":false,"destructiveHint":true}`)},
		Policy: store.PolicySetting{Policy: store.PolicyAsk, Reason: "ask: may be destructive"}}
	item := ToolItem("3", e)
	if item.AgentName != "" || OfferedName(e) != "" {
		t.Errorf("a flagged tool is named %q for agents", item.AgentName)
	}
	if len(item.Annotations) != 2 || item.Annotations[0].Key != "destructiveHint" || item.Annotations[0].Value != "true" {
		t.Errorf("annotations = %+v", item.Annotations)
	}
	if item.PolicyReason != "ask: may be destructive" || item.Key != "3" {
		t.Errorf("item = %+v", item)
	}
	e.State = store.ToolActive
	if OfferedName(e) != "s__rm" {
		t.Errorf("an active tool's agent name = %q", OfferedName(e))
	}
}
