package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// The API token serve makes, when SWITCHBOARD_TOKEN does not choose one,
// is kept in a file beside the database (see apiTokenPath), readable by
// its user only, and used again at every start: a restart does not
// change it. `switchboard token --rotate` writes a new one there, and a
// running dashboard refuses the old one from then on (it re-reads the
// file when it is replaced; see web.Config.TokenFile). The store keeps no
// copy: the database is locked while the dashboard runs, and the file is
// where the person who runs it, and only they, can read the token.

// minAPITokenLength is the shortest kept token serve accepts; a shorter
// file's content is not a token it made.
const minAPITokenLength = 32

// readAPIToken is the API token kept at path; fs.ErrNotExist if there is
// none.
func readAPIToken(path string) (string, error) {
	// Only a file that is the user's alone: another user's would be a
	// token they know (issue 34, M4).
	b, err := readSecretFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(b)
	if len(tok) < minAPITokenLength || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("%s does not hold an API token Switchboard made; remove it, or run switchboard token --rotate", path)
	}
	return tok, nil
}

// keptAPIToken is the API token kept at path, made and kept there first
// if there is none (made reports that).
func keptAPIToken(path string) (tok string, made bool, err error) {
	tok, err = readAPIToken(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return tok, false, err
	}
	tok = randomToken()
	return tok, true, keepMCPToken(path, tok)
}

const tokenUsage = `usage: switchboard token [--rotate] [-db PATH]

Prints the dashboard's API token: the bearer token of /api/v1, which also
logs a browser in. Switchboard makes it at its first start and keeps it
beside the database, readable by you only; it stays the same across
restarts. With --rotate, a new token replaces it: a running dashboard
refuses the old one at once. (With SWITCHBOARD_TOKEN set, that is the
token, and there is none kept to print or rotate.)
`

// tokenCmd runs `switchboard token [--rotate]`.
func tokenCmd(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("token", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() { fmt.Fprint(stderr, tokenUsage); fset.PrintDefaults() }
	rotate := fset.Bool("rotate", false, "replace the token with a new one; the old one stops working")
	dbPath := dbFlag(fset, getenv)
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2}
	}
	if fset.NArg() > 0 {
		return usageError("token takes no arguments, got %q", fset.Args())
	}
	if getenv("SWITCHBOARD_TOKEN") != "" {
		return errors.New("token: SWITCHBOARD_TOKEN is set, so it is the API token, and Switchboard keeps none; to change it, change SWITCHBOARD_TOKEN and restart the dashboard")
	}
	path := apiTokenPath(*dbPath)
	if !*rotate {
		tok, err := readAPIToken(path)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("token: no API token is kept at %s yet: switchboard serve makes one at its first start (choose the database with -db or SWITCHBOARD_DB)", path)
		}
		if err != nil {
			return fmt.Errorf("token: %w", err)
		}
		fmt.Fprintln(stdout, tok)
		return nil
	}
	if _, err := os.Stat(*dbPath); err != nil {
		return fmt.Errorf("token: there is no database at %s (choose one with -db or SWITCHBOARD_DB)", *dbPath)
	}
	tok := randomToken()
	if err := keepMCPToken(path, tok); err != nil {
		return fmt.Errorf("token: keep the new token: %w", err)
	}
	fmt.Fprintln(stdout, tok)
	fmt.Fprintf(stderr, "A new API token is kept in %s.\nA running dashboard refuses the old one from now on: give the new one to programs that used the old.\n", path)
	return nil
}
