package views

// Live updates: the names of the events the SSE hub publishes and the
// pages listen for (sse-swap, hx-trigger="sse:…"), defined once for both.
const (
	// EventServers: the list of servers changed (one added or deleted);
	// the list reloads.
	EventServers = "servers"
	// EventCalls: the call log has new entries; the log reloads.
	EventCalls = "calls"
	// EventApprovals carries the cards of the calls waiting for a person.
	EventApprovals = "approvals"
	// EventUpstreams carries the list of upstream sessions held.
	EventUpstreams = "upstreams"
	// EventVerifyAll carries the progress of the latest "Verify all".
	EventVerifyAll = "verify-all"
	// EventProfiles: a profile was made, changed or deleted; the
	// Profiles list reloads.
	EventProfiles = "profiles"
)

// RowEvent carries a server's cells in the list.
func RowEvent(id string) string { return "row-" + id }

// StatusEvent carries a server's status panel.
func StatusEvent(id string) string { return "status-" + id }

// ToolsEvent signals that a server's tools or policies changed; its tools
// section reloads.
func ToolsEvent(id string) string { return "tools-" + id }

// HistoryEvent signals a new verification in a server's history; the
// history reloads.
func HistoryEvent(id string) string { return "history-" + id }

// TryEvent carries the progress of the Try it call with the opaque id
// callID (see TryView.CallID).
func TryEvent(callID string) string { return "try-" + callID }

// TryQuestionEvent carries what the server asks during the Try it call
// with the opaque id callID (a question box, or nothing once answered).
func TryQuestionEvent(callID string) string { return "try-question-" + callID }
