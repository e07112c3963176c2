package web_test

import (
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// What isolation a verification got is kept with the server and shown
// by the API and on the server's page; a remote server has none.
func TestIsolationShown(t *testing.T) {
	e := newEnv(t)
	e.createServer(fixtureServer("iso"))
	if job := e.verify("iso"); job.Status != "success" {
		t.Fatalf("verify = %v", job)
	}
	// The walls' tier first, then the process containment.
	want := "landlock-v"
	contains := "process group + limits set before exec"
	if runtime.GOOS == "windows" {
		want, contains = "job object", "job object"
	}
	iso := e.discovery("iso").Isolation
	if !strings.HasPrefix(iso, want) || !strings.Contains(iso, contains) {
		t.Errorf("API discovery.isolation = %q; want it to start with %q and hold %q", iso, want, contains)
	}
	page := e.login().get("/servers/iso")
	wantStatus(t, page, http.StatusOK)
	if got := testIDText(t, parseHTML(t, page.Body.String()), "isolation"); got != iso {
		t.Errorf("the page shows isolation %q; want %q", got, iso)
	}
}
