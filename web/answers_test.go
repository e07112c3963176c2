package web_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The JSON API's answers as these tests read them. The types are the
// tests' own, written from the outside (docs/architecture.md "Web, API and CLI"):
// they check the contract, not web's structs. decodeAs refuses a field
// they do not know, so a renamed or new field fails a test instead of
// reading as a zero value.

// apiServer is a server (GET /api/v1/servers/:id).
type apiServer struct {
	UpdatedBy     string            `json:"updated_by"`
	ConfirmedBy   string            `json:"confirmed_by"`
	ConfirmedAt   *time.Time        `json:"confirmed_at"`
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Transport     string            `json:"transport"`
	Command       string            `json:"command"`
	Args          []string          `json:"args"`
	Env           map[string]string `json:"env"`
	Cwd           string            `json:"cwd"`
	URL           string            `json:"url"`
	Headers       map[string]string `json:"headers"`
	TimeoutMS     int               `json:"timeout_ms"`
	MemoryMB      int               `json:"memory_mb"`
	TTLSeconds    *int              `json:"ttl_seconds"`
	AutoRefresh   *bool             `json:"auto_refresh"`
	DefaultPolicy string            `json:"default_policy"`
	Preset        string            `json:"preset"`
	Enabled       *bool             `json:"enabled"`
	OAuth         *apiOAuth         `json:"oauth"`
	RecordArgs    *bool             `json:"record_arguments"`
	SignIn        *apiGrant         `json:"sign_in"`
	Discovery     *apiDiscovery     `json:"discovery"`
	Sandbox       *apiSandbox       `json:"sandbox"`
	Asks          map[string]string `json:"asks"`
	FromRegistry  *struct {
		Registry  string            `json:"registry"`
		Name      string            `json:"name"`
		Version   string            `json:"version"`
		Kind      string            `json:"kind"`
		Package   string            `json:"package"`
		Choice    int               `json:"choice"`
		Arguments map[string]string `json:"arguments"`
		Artifact  string            `json:"artifact"`
		Held      string            `json:"held"`
	} `json:"from_registry"`
}

// apiSandbox is a stdio server's permission profile in the API.
type apiSandbox struct {
	Files        string   `json:"files"`
	Read         []string `json:"read"`
	Write        []string `json:"write"`
	Deny         []string `json:"deny"`
	Network      string   `json:"network"`
	Allow        []string `json:"allow"`
	CPUPercent   int      `json:"cpu_percent"`
	Processes    int      `json:"processes"`
	Runner       string   `json:"runner"`
	SkipArgPaths []string `json:"skip_arg_paths"`
	Weaker       bool     `json:"weaker"`
	Off          bool     `json:"off"`
}

type apiOAuth struct {
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret"`
	Scopes       []string `json:"scopes"`
}

// apiGrant is a server's sign-in: who, never a token.
type apiGrant struct {
	Issuer           string     `json:"issuer"`
	Scope            string     `json:"scope"`
	ExpiresAt        *time.Time `json:"expires_at"`
	RefreshTokenHeld bool       `json:"refresh_token_held"`
	RefreshedAt      time.Time  `json:"refreshed_at"`
	Problem          string     `json:"problem"`
	SignedInBy       string     `json:"signed_in_by"`
	SignedInAt       *time.Time `json:"signed_in_at"`
}

// apiDiscovery is what is known of a server's verifications.
type apiDiscovery struct {
	Status          string          `json:"status"`
	Phase           string          `json:"phase"`
	JobID           string          `json:"job_id"`
	VerifiedAt      *time.Time      `json:"verified_at"`
	LastAttemptAt   *time.Time      `json:"last_attempt_at"`
	ToolCount       int             `json:"tool_count"`
	Stale           bool            `json:"stale"`
	Freshness       apiFreshness    `json:"freshness"`
	Delta           *apiDelta       `json:"delta"`
	ChangedTools    int             `json:"changed_tools"`
	Watch           *apiWatch       `json:"watch"`
	ProtocolVersion string          `json:"protocol_version"`
	ListTTLMS       *int64          `json:"list_ttl_ms"`
	CacheScope      string          `json:"cache_scope"`
	Isolation       string          `json:"isolation"`
	ServerName      string          `json:"server_name"`
	ServerVersion   string          `json:"server_version"`
	Warnings        []string        `json:"warnings"`
	Error           *apiVerifyError `json:"error"`
}

type apiFreshness struct {
	State       string          `json:"state"`
	VerifiedAt  *time.Time      `json:"verified_at"`
	FreshUntil  *time.Time      `json:"fresh_until"`
	StaleSince  *time.Time      `json:"stale_since"`
	Reason      string          `json:"reason"`
	ListTTLHint bool            `json:"list_ttl_hint"`
	Error       *apiVerifyError `json:"error"`
}

type apiDelta struct {
	Added        int      `json:"added"`
	Removed      int      `json:"removed"`
	Changed      int      `json:"changed"`
	AddedNames   []string `json:"added_names"`
	RemovedNames []string `json:"removed_names"`
	ChangedNames []string `json:"changed_names"`
	Text         string   `json:"text"`
}

type apiWatch struct {
	Connected bool       `json:"connected"`
	Since     *time.Time `json:"since"`
	LastError string     `json:"last_error"`
}

// apiVerifyError is why a verification failed.
type apiVerifyError struct {
	Class      string         `json:"class"`
	Phase      string         `json:"phase"`
	Message    string         `json:"message"`
	Suggestion string         `json:"suggestion"`
	StderrTail string         `json:"stderr_tail"`
	SignIn     *apiSignInNeed `json:"sign_in"`
	Lasting    bool           `json:"lasting"`
	Refused    *struct {
		Hosts []apiRefusedHost `json:"hosts"`
		Paths []string         `json:"paths"`
	} `json:"refused"`
}

type apiRefusedHost struct {
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Reason string `json:"reason"`
}

type apiSignInNeed struct {
	Status           int      `json:"status"`
	Error            string   `json:"error"`
	Scope            string   `json:"scope"`
	ResourceMetadata string   `json:"resource_metadata"`
	Issuer           string   `json:"issuer"`
	Scopes           []string `json:"scopes"`
	Problem          string   `json:"problem"`
}

// apiJob is a verification job (GET /api/v1/jobs/:id).
type apiJob struct {
	ID         string          `json:"id"`
	ServerID   string          `json:"server_id"`
	Status     string          `json:"status"`
	Phase      string          `json:"phase"`
	Page       int             `json:"page"`
	QueuedAt   time.Time       `json:"queued_at"`
	StartedAt  *time.Time      `json:"started_at"`
	FinishedAt *time.Time      `json:"finished_at"`
	Timings    []apiTiming     `json:"timings"`
	ToolCount  int             `json:"tool_count"`
	Error      *apiVerifyError `json:"error"`
	Trigger    string          `json:"trigger"`
	Delta      *apiDelta       `json:"delta"`
}

type apiTiming struct {
	Phase string `json:"phase"`
	MS    int64  `json:"ms"`
}

// apiTool is a tool of a server or of the catalog.
type apiTool struct {
	Server          string          `json:"server"`
	Freshness       *apiFreshness   `json:"freshness"`
	Name            string          `json:"name"`
	AgentName       string          `json:"agent_name"`
	Title           string          `json:"title"`
	Description     string          `json:"description"`
	InputSchema     json.RawMessage `json:"input_schema"`
	Annotations     json.RawMessage `json:"annotations"`
	State           string          `json:"state"`
	Problems        []string        `json:"problems"`
	Needs           []string        `json:"needs"`
	Policy          string          `json:"policy"`
	PolicyReason    string          `json:"policy_reason"`
	PolicySetBy     string          `json:"policy_set_by"`
	EffectivePolicy string          `json:"effective_policy"`
	Pin             string          `json:"pin"`
}

// apiHistoryEntry is one verification of a server's history.
type apiHistoryEntry struct {
	Seq             uint64          `json:"seq"`
	JobID           string          `json:"job_id"`
	Trigger         string          `json:"trigger"`
	StartedAt       string          `json:"started_at"`
	FinishedAt      string          `json:"finished_at"`
	DurationMS      int64           `json:"duration_ms"`
	Outcome         string          `json:"outcome"`
	Error           *apiVerifyError `json:"error"`
	Delta           *apiDelta       `json:"delta"`
	ToolCount       int             `json:"tool_count"`
	ServerVersion   string          `json:"server_version"`
	PreviousVersion string          `json:"previous_version"`
}

// apiBatch is a Verify all.
type apiBatch struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	Total     int       `json:"total"`
	Queued    int       `json:"queued"`
	Running   int       `json:"running"`
	Succeeded int       `json:"succeeded"`
	Failed    int       `json:"failed"`
	Cancelled int       `json:"cancelled"`
	Stopped   bool      `json:"stopped"`
	Done      bool      `json:"done"`
	Jobs      []struct {
		ServerID string `json:"server_id"`
		JobID    string `json:"job_id"`
		Status   string `json:"status"`
	} `json:"jobs"`
	Skipped []struct {
		ServerID string `json:"server_id"`
		Reason   string `json:"reason"`
	} `json:"skipped"`
}

// apiError is an error answer, with a message per invalid field.
type apiError struct {
	Error  string            `json:"error"`
	Fields map[string]string `json:"fields"`
}

// apiLaunchRefused is the 409 of a Verify whose launch is unconfirmed.
type apiLaunchRefused struct {
	Error  string    `json:"error"`
	Launch apiLaunch `json:"launch"`
}

// apiLaunch is a launch waiting for a person's confirmation.
type apiLaunch struct {
	ServerID    string   `json:"server_id"`
	Transport   string   `json:"transport"`
	CommandLine string   `json:"command_line"`
	Command     string   `json:"command"`
	Args        []string `json:"args"`
	Cwd         string   `json:"cwd"`
	EnvKeys     []string `json:"env_keys"`
	URL         string   `json:"url"`
	HeaderKeys  []string `json:"header_keys"`
	Hash        string   `json:"launch_hash"`
	// Changes are what changed since the launch last confirmed.
	Changes []apiLaunchChange `json:"changes"`
}

// apiLaunchChange is one difference from the launch last confirmed.
type apiLaunchChange struct {
	What   string `json:"what"`
	Name   string `json:"name"`
	Change string `json:"change"`
	Old    string `json:"old"`
	New    string `json:"new"`
}

// apiCall is a tool call in the audit log.
type apiCall struct {
	Seq         uint64    `json:"seq"`
	At          time.Time `json:"at"`
	Session     string    `json:"session"`
	Client      string    `json:"client"`
	ConnectedAs string    `json:"connected_as"`
	Profile     string    `json:"profile"`
	Method      string    `json:"method"`
	ServerID    string    `json:"server_id"`
	Tool        string    `json:"tool"`
	AgentName   string    `json:"agent_name"`
	ArgsHash    string    `json:"args_hash"`
	Pin         string    `json:"pin"`
	Policy      string    `json:"policy"`
	Decision    string    `json:"decision"`
	DecidedBy   string    `json:"decided_by"`
	Reason      string    `json:"reason"`
	DurationMS  int64     `json:"duration_ms"`
	Outcome     string    `json:"outcome"`
	Error       string    `json:"error"`
	// Arguments are kept only for a server that records them.
	Arguments          string `json:"arguments"`
	ArgumentsTruncated bool   `json:"arguments_truncated"`
}

// apiClient is a connected client as the API lists it.
type apiClient struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	CreatedAt   string `json:"created_at"`
	CreatedBy   string `json:"created_by"`
	Profile     string `json:"profile"`
	Fingerprint string `json:"fingerprint"`
	// State is connected, seen or never; the rest is what the agent
	// declared with the token last.
	State           string `json:"state"`
	LastSeenAt      string `json:"last_seen_at"`
	ProtocolVersion string `json:"protocol_version"`
	ClientInfo      string `json:"client_info"`
	Sessions        int    `json:"sessions"`
	// Approvals is where its ask calls are answered as set on it;
	// ApprovalsInClient the outcome; Allowed what its person always
	// allows in it.
	Approvals         string `json:"approvals"`
	ApprovalsInClient bool   `json:"approvals_in_client"`
	Allowed           []struct {
		ServerID string `json:"server_id"`
		Tool     string `json:"tool"`
		Pin      string `json:"pin"`
		At       string `json:"at"`
	} `json:"allowed"`
}

// apiApproval is a call waiting for a person.
type apiApproval struct {
	ID        string    `json:"id"`
	At        time.Time `json:"at"`
	Deadline  time.Time `json:"deadline"`
	Session   string    `json:"session"`
	Client    string    `json:"client"`
	ServerID  string    `json:"server_id"`
	Tool      string    `json:"tool"`
	AgentName string    `json:"agent_name"`
	Arguments string    `json:"arguments"`
}

// apiImport is the answer of POST /api/v1/import: the plan and, when
// applied, the result; or where the text is no config.
type apiImport struct {
	Format   string           `json:"format"`
	Entries  []apiImportEntry `json:"entries"`
	Warnings []string         `json:"warnings"`
	Result   *apiImportResult `json:"result"`
	Error    string           `json:"error"`
	Line     int              `json:"line"`
	Column   int              `json:"column"`
}

type apiImportEntry struct {
	Name   string `json:"name"`
	ID     string `json:"id"`
	Action string `json:"action"`
	Choice string `json:"choice"`
	NewID  string `json:"new_id"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Diff   []struct {
		Field string `json:"field"`
		Old   string `json:"old"`
		New   string `json:"new"`
	} `json:"diff"`
	Secrets     []string `json:"secrets"`
	Refs        []string `json:"refs"`
	Notes       []string `json:"notes"`
	Errors      []string `json:"errors"`
	Target      string   `json:"target"`
	Fingerprint string   `json:"fingerprint"`
}

type apiImportResult struct {
	Added   int      `json:"added"`
	Updated int      `json:"updated"`
	Skipped int      `json:"skipped"`
	Invalid int      `json:"invalid"`
	Failed  int      `json:"failed"`
	Lines   []string `json:"lines"`
	Servers []string `json:"servers"`
}

// apiProfile is a profile (GET /api/v1/profiles/:id).
type apiProfile struct {
	ID        string       `json:"id"`
	Name      string       `json:"name"`
	Mode      string       `json:"mode"`
	Servers   []string     `json:"servers"`
	Tools     []apiToolRef `json:"tools"`
	Overrides []struct {
		ServerID string `json:"server_id"`
		Tool     string `json:"tool"`
		Policy   string `json:"policy"`
	} `json:"overrides"`
	Search    bool         `json:"search"`
	Pinned    []apiToolRef `json:"pinned"`
	CreatedAt time.Time    `json:"created_at"`
	UpdatedAt time.Time    `json:"updated_at"`
}

type apiToolRef struct {
	ServerID string `json:"server_id"`
	Tool     string `json:"tool"`
}

// apiOfferedTool is a tool a profile offers (its preview).
type apiOfferedTool struct {
	AgentName       string `json:"agent_name"`
	ServerID        string `json:"server_id"`
	Tool            string `json:"tool"`
	Title           string `json:"title"`
	EffectivePolicy string `json:"effective_policy"`
}

// The envelopes the answers come in.
type (
	profileAnswer struct {
		Profile apiProfile `json:"profile"`
	}
	profilesAnswer struct {
		Profiles []apiProfile `json:"profiles"`
	}
	previewAnswer struct {
		Profile string           `json:"profile"`
		Tools   []apiOfferedTool `json:"tools"`
		Listed  []struct {
			Kind     string `json:"kind"`
			Name     string `json:"name"`
			ServerID string `json:"server_id"`
			Key      string `json:"key"`
			Policy   string `json:"effective_policy"`
		} `json:"listed"`
	}
	jobAnswer struct {
		Job apiJob `json:"job"`
	}
	batchAnswer struct {
		Batch apiBatch `json:"batch"`
	}
	launchesAnswer struct {
		Launches []apiLaunch `json:"launches"`
	}
	toolAnswer struct {
		Tool apiTool `json:"tool"`
	}
	toolsAnswer struct {
		Tools []apiTool `json:"tools"`
	}
	serversAnswer struct {
		Servers []apiServer `json:"servers"`
	}
	approvalsAnswer struct {
		Approvals []apiApproval `json:"approvals"`
	}
	callsAnswer struct {
		Calls []apiCall `json:"calls"`
		Total int       `json:"total"`
	}
	// sessionsEndedAnswer answers DELETE /api/v1/sessions.
	sessionsEndedAnswer struct {
		Ended int `json:"ended"`
	}
	historyAnswer struct {
		History    []apiHistoryEntry `json:"history"`
		Total      int               `json:"total"`
		KeptAtMost int               `json:"kept_at_most"`
	}
)

// decodeAs parses a JSON answer into T, refusing fields T lacks.
func decodeAs[T any](t testing.TB, rec *httptest.ResponseRecorder) T {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type = %q, want JSON; body: %s", ct, truncate(rec.Body.String()))
	}
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.DisallowUnknownFields()
	var v T
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s as %T: %v", truncate(rec.Body.String()), v, err)
	}
	return v
}

// ptr is a pointer to v, for the optional fields of a wanted answer.
func ptr[T any](v T) *T { return &v }

// apiListed is one resource, resource template or prompt
// (GET /api/v1/servers/:id/resources and …/prompts).
type apiListed struct {
	URI             string              `json:"uri"`
	URITemplate     string              `json:"uri_template"`
	Name            string              `json:"name"`
	Title           string              `json:"title"`
	Description     string              `json:"description"`
	MIMEType        string              `json:"mime_type"`
	Size            *int64              `json:"size"`
	Annotations     json.RawMessage     `json:"annotations"`
	Arguments       []apiPromptArgument `json:"arguments"`
	State           string              `json:"state"`
	Problems        []string            `json:"problems"`
	Policy          string              `json:"policy"`
	EffectivePolicy string              `json:"effective_policy"`
	Pin             string              `json:"pin"`
	Approved        json.RawMessage     `json:"approved"`
	FirstSeen       time.Time           `json:"first_seen"`
	LastSeen        time.Time           `json:"last_seen"`
}

type apiPromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

// resourcesAnswer is GET /api/v1/servers/:id/resources.
type resourcesAnswer struct {
	Resources         []apiListed `json:"resources"`
	ResourceTemplates []apiListed `json:"resource_templates"`
}

// promptsAnswer is GET /api/v1/servers/:id/prompts.
type promptsAnswer struct {
	Prompts []apiListed `json:"prompts"`
}
