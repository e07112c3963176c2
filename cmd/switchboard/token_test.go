package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

var apiTokenLine = regexp.MustCompile(`API token .*: ([0-9a-f]{64})`)

// printedToken is the API token serve printed.
func printedToken(t *testing.T, s *serving) string {
	t.Helper()
	m := apiTokenLine.FindStringSubmatch(s.stdout.String())
	if m == nil {
		t.Fatalf("stdout = %q; want the API token", s.stdout.String())
	}
	return m[1]
}

// apiStatus is the status of GET /api/v1/servers with token.
func apiStatus(t *testing.T, base, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/servers", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// runToken runs `switchboard token ARGS...` and returns its stdout and
// stderr.
func runToken(t *testing.T, vars map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), append([]string{"token"}, args...), env(vars), nil, &out, &errOut)
	return out.String(), errOut.String(), err
}

// The API token serve makes is kept beside the database, readable by its
// user only, printed by switchboard token, and the same after a restart.
func TestAPITokenSurvivesRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sb.db")
	vars := map[string]string{"SWITCHBOARD_DB": db}
	first := startServeArgs(t, []string{"-addr", "127.0.0.1:0"}, vars)
	tok := printedToken(t, first)
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(apiTokenPath(db)); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Fatalf("kept token file: %v, %v; want mode 0600", fi, err)
	}
	if out, _, err := runToken(t, nil, "-db", db); err != nil || strings.TrimSpace(out) != tok {
		t.Errorf("switchboard token -db = %q, %v; want %s", out, err, tok)
	}
	second := startServeArgs(t, []string{"-addr", "127.0.0.1:0"}, vars)
	defer second.stop()
	if got := printedToken(t, second); got != tok {
		t.Errorf("API token after a restart = %s; want the same, %s", got, tok)
	}
	if code := apiStatus(t, second.base, tok); code != http.StatusOK {
		t.Errorf("API with the token of the run before = %d; want 200", code)
	}
}

// switchboard token --rotate makes a new token; the running dashboard
// refuses the old one at once, accepts the new one, and so does the next
// run.
func TestAPITokenRotateWhileRunning(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sb.db")
	vars := map[string]string{"SWITCHBOARD_DB": db}
	s := startServeArgs(t, []string{"-addr", "127.0.0.1:0"}, vars)
	defer func() { s.stop() }()
	old := printedToken(t, s)
	if code := apiStatus(t, s.base, old); code != http.StatusOK {
		t.Fatalf("API with the printed token = %d; want 200", code)
	}
	out, errOut, err := runToken(t, vars, "--rotate")
	rotated := strings.TrimSpace(out)
	if err != nil || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(rotated) || rotated == old {
		t.Fatalf("switchboard token --rotate = %q, %v; want a new token", out, err)
	}
	if !strings.Contains(errOut, "refuses the old one") {
		t.Errorf("stderr of --rotate = %q; want it to say the old token stops working", errOut)
	}
	if code := apiStatus(t, s.base, old); code != http.StatusUnauthorized {
		t.Errorf("API with the old token after --rotate = %d; want 401", code)
	}
	if code := apiStatus(t, s.base, rotated); code != http.StatusOK {
		t.Errorf("API with the new token = %d; want 200", code)
	}
	if out, _, err := runToken(t, vars); strings.TrimSpace(out) != rotated || err != nil {
		t.Errorf("switchboard token after --rotate = %q, %v; want the new token", out, err)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	s = startServeArgs(t, []string{"-addr", "127.0.0.1:0"}, vars)
	if got := printedToken(t, s); got != rotated {
		t.Errorf("API token at the next start = %s; want the rotated one", got)
	}
}

func TestTokenCommandErrors(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "sb.db")
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		code int    // exit status (see main)
		want string // in the message
	}{
		{"no token kept yet", nil, []string{"-db", db}, 1, "no API token is kept"},
		{"rotate without a database", nil, []string{"--rotate", "-db", db}, 1, "no database"},
		{"token set by the environment", map[string]string{"SWITCHBOARD_TOKEN": "chosen-0123456789", "SWITCHBOARD_DB": db}, nil, 1, "SWITCHBOARD_TOKEN is set"},
		{"an argument", nil, []string{"-db", db, "extra"}, 2, "no arguments"},
		{"an unknown flag", nil, []string{"-nope"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runToken(t, tc.vars, tc.args...)
			code := 0
			if err != nil {
				code = 1
				var ee *exitError
				if errors.As(err, &ee) {
					code = ee.code
				}
			}
			if code != tc.code || !strings.Contains(errString(err), tc.want) || out != "" {
				t.Errorf("token %q = stdout %q, %v (exit %d); want exit %d mentioning %q, nothing on stdout", tc.args, out, err, code, tc.code, tc.want)
			}
		})
	}
	// A file that holds no token serve made is refused, by serve too.
	if err := os.WriteFile(apiTokenPath(db), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runToken(t, nil, "-db", db); err == nil || !strings.Contains(err.Error(), "does not hold an API token") {
		t.Errorf("token with a bad file = %v; want it refused", err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0", "-db", db}, env(nil), nil, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "does not hold an API token") {
		t.Errorf("serve with a bad token file = %v; want it refused at start", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
