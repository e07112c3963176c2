// Package views renders Switchboard's pages and the fragments htmx swaps
// in, from plain view models. It knows neither Echo nor the store. Every
// value a server sent is rendered escaped; none is used in an attribute
// that htmx interprets, an id or a URL.
package views

import (
	"fmt"
	"github.com/a-h/templ"
	"strconv"
	"time"
)

// Page is what the layout needs.
type Page struct {
	Title string
	CSRF  string
	// Flash is a one-line notice shown at the top, e.g. after a delete.
	Flash string
	// Revision is the store revision the page was read at; the live
	// stream catches up on anything newer when it connects.
	Revision string
}

// ServerItem is one server with its live status, as the list row and the
// detail page's status panel show it.
type ServerItem struct {
	ID        string
	Name      string
	Transport string
	// Target is the exact command line or the URL.
	Target  string
	Enabled bool
	// NeedsConfirm says a person must confirm the launch before the next
	// Verify (see Launch).
	NeedsConfirm bool

	// Status is the job status while a job is in flight, otherwise the
	// stored discovery status.
	Status       string
	Phase        string
	Page         int
	RunningSince time.Time // zero unless a job is in flight
	JobID        string
	Elapsed      time.Duration // of the last finished job

	ToolCount       int
	VerifiedAt      time.Time
	LastAttemptAt   time.Time
	Stale           bool
	ProtocolVersion string
	ServerName      string
	ServerVersion   string
	Timings         []Timing
	Error           *ErrorView
	Warnings        []string
}

// Timing is one phase's duration.
type Timing struct {
	Phase string
	MS    int64
}

// ErrorView is a failed verification's error.
type ErrorView struct {
	Class      string
	Phase      string
	Message    string
	Suggestion string
	StderrTail string
}

// Running reports whether a job is queued or running.
func (s ServerItem) Running() bool { return !s.RunningSince.IsZero() }

// PhaseLabel is the human label of the current phase.
func (s ServerItem) PhaseLabel() string {
	switch {
	case s.Phase == "listing" && s.Page > 0:
		return fmt.Sprintf("listing page %d", s.Page)
	case s.Phase != "":
		return s.Phase
	}
	return s.Status
}

// StatusLabel is the badge text.
func (s ServerItem) StatusLabel() string {
	if s.Running() {
		return s.PhaseLabel()
	}
	if s.Status == "never" {
		return "not verified"
	}
	return s.Status
}

// ServerDetail is the detail page.
type ServerDetail struct {
	Item          ServerItem
	Command       string
	Args          []string
	EnvKeys       []string
	Cwd           string
	URL           string
	HeaderKeys    []string
	DefaultPolicy string
	TimeoutMS     int
	MemoryMB      int // 0: no cap
	Instructions  string
	Tools         []ToolItem
}

// ToolItem is one tool row. Key is an opaque per-page index used for
// element ids; the tool name is data only.
type ToolItem struct {
	Key         string
	ServerID    string
	Name        string
	Title       string
	Description string
	InputSchema string // pretty-printed JSON
	Annotations []Annotation
	State       string
	Problems    []string // why an oversized or invalid tool is not offered
	Policy      string
	Effective   string
}

// Annotation is one tool annotation.
type Annotation struct {
	Key   string
	Value string
}

// ServerForm is the add/edit form's values, exactly as typed.
type ServerForm struct {
	ID            string
	Name          string
	Transport     string
	Command       string
	Args          string // one per line
	Env           []KV
	Cwd           string
	URL           string
	Headers       []KV
	TimeoutMS     string
	MemoryMB      string
	DefaultPolicy string
	Enabled       bool
}

// KV is one env or header row. Secret values are never rendered back:
// Set says a value is stored, and an empty value keeps it.
// KV is one env or header row of the form. Values are secrets and
// write-only: a form never carries one back. Set means the saved server
// has a value for Key (an empty input keeps it); Retype means the person
// typed a value that this re-rendered form could not send back.
type KV struct {
	Key    string
	Set    bool
	Retype bool
}

// FormErrors maps a field name to its message.
type FormErrors map[string]string

// FormView is the add/edit form page.
type FormView struct {
	Form   ServerForm
	Errors FormErrors
	Edit   bool
}

func itoa(i int) string { return strconv.Itoa(i) }

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// ago renders a relative time; app.js keeps it current.
func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d d ago", int(d.Hours()/24))
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func formAction(f FormView) templ.SafeURL {
	if f.Edit {
		return templ.SafeURL("/servers/" + f.Form.ID)
	}
	return "/servers"
}

func invalid(f FormView, name string) string {
	if _, ok := f.Errors[name]; ok {
		return "invalid"
	}
	return ""
}

func valuePlaceholder(r KV) string {
	switch {
	case r.Retype && r.Set:
		return "enter the new value again, or leave empty to keep the saved one"
	case r.Retype:
		return "enter the value again (not sent back)"
	case r.Set:
		return "set; leave empty to keep"
	}
	return "value"
}

// Launch is what a person confirms before Switchboard first runs a
// server's command or contacts its URL: all of it, untruncated, secret
// values left out.
type Launch struct {
	ServerID    string
	Name        string
	Transport   string
	CommandLine string // command and args, shell-quoted
	Command     string
	Args        []string
	Cwd         string
	EnvKeys     []string
	MemoryMB    int
	URL         string
	HeaderKeys  []string
	// Hash identifies this launch; the form sends it back so that only
	// the launch shown is confirmed.
	Hash string
	// Changed says an earlier launch of this server was confirmed.
	Changed bool
}
