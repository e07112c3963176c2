package present

import (
	"net/url"

	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// ReadForm reads the add/edit form: the input to validate, and the form
// as typed for a re-render. Secret values are write-only: the re-rendered
// form never carries them, and asks again for the ones that were typed.
func ReadForm(v url.Values) (serverconfig.Input, views.ServerForm) {
	in := serverconfig.FormInput(v)
	f := views.ServerForm{
		ID: in.ID, Name: in.Name, Transport: in.Transport, Command: in.Command, Args: serverconfig.ArgsText(v),
		Cwd: in.Cwd, URL: in.URL, TimeoutS: in.TimeoutSeconds, MemoryMB: v.Get("memory_mb"), TTLSeconds: in.TTLSeconds,
		AutoRefresh: in.AutoRefresh, DefaultPolicy: in.DefaultPolicy, Enabled: in.Enabled,
		OAuthClientID: in.OAuthClientID, OAuthClientSecretRetype: in.OAuthClientSecret != "", OAuthScopes: v.Get("oauth_scopes"),
	}
	f.SandboxFiles, f.SandboxNetwork, f.SandboxRunner = v.Get("sandbox_files"), v.Get("sandbox_network"), v.Get("sandbox_runner")
	f.SandboxAllow, f.SandboxRead, f.SandboxWrite = v.Get("sandbox_allow"), v.Get("sandbox_read"), v.Get("sandbox_write")
	f.SandboxDeny, f.SandboxSkip = v.Get("sandbox_deny"), v.Get("sandbox_skip_arg_paths")
	f.SandboxCPU, f.SandboxProcesses = v.Get("sandbox_cpu_percent"), v.Get("sandbox_processes")
	f.SandboxWeaker, f.SandboxOff = v.Get("sandbox_weaker") == "on", v.Get("sandbox_off") == "on"
	for _, r := range in.Env {
		f.Env = append(f.Env, views.KV{Key: r.Key, Retype: r.Value != ""})
	}
	for _, r := range in.Headers {
		f.Headers = append(f.Headers, views.KV{Key: r.Key, Retype: r.Value != ""})
	}
	return in, f
}

// MarkStored marks, in a form shown again after a failed edit, the rows
// and secret whose value the store holds as set (an empty value keeps
// them).
func MarkStored(f *views.ServerForm, old store.Server) {
	for i, r := range f.Env {
		_, f.Env[i].Set = old.Env[r.Key]
	}
	for i, r := range f.Headers {
		_, f.Headers[i].Set = old.Headers[r.Key]
	}
	f.OAuthClientSecretSet = old.OAuthSettings().ClientSecret != ""
}

// SavedURL is where a saved add or edit form leads: the launch's review
// when the person chose "Save and review the launch" (next=confirm), else
// the server's page.
func SavedURL(id, next string) string {
	if next == "confirm" {
		return "/servers/" + id + "/confirm"
	}
	return "/servers/" + id
}
