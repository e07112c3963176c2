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
	want := "process group + limits set before exec"
	if runtime.GOOS == "windows" {
		want = "job object"
	}
	iso := e.discovery("iso").Isolation
	if !strings.HasPrefix(iso, want) {
		t.Errorf("API discovery.isolation = %q; want it to start with %q", iso, want)
	}
	page := e.login().get("/servers/iso")
	wantStatus(t, page, http.StatusOK)
	if got := testIDText(t, parseHTML(t, page.Body.String()), "isolation"); got != iso {
		t.Errorf("the page shows isolation %q; want %q", got, iso)
	}
}
