// Package storetest is the conformance suite of store backends: every
// behaviour the store contract promises (see package store), as tests
// any backend must pass. A backend's own tests call Run with a Backend
// that opens it; what is particular to one backend (a file's locking,
// damage and durability for store/bolt) stays in its own tests.
package storetest

import (
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// Backend opens the store under test.
type Backend struct {
	// Open returns a new, empty store, closed when the test ends.
	Open func(t *testing.T) store.Store
	// Reopen closes st and opens the same storage again, as a restart
	// does; the store it returns is closed when the test ends.
	Reopen func(t *testing.T, st store.Store) store.Store
	// Leftovers, if set, lists what st still holds under the id of a
	// server it deleted, anywhere in its storage (even where no reader
	// looks); it must be nothing.
	Leftovers func(t *testing.T, st store.Store, id string) []string
}

// Run runs the whole suite against b, each test as a subtest.
func Run(t *testing.T, b Backend) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, Backend)
	}{
		{"ServerCRUD", testServerCRUD},
		{"SummariesOrderedAndEmptyNotNil", testSummariesOrderedAndEmptyNotNil},
		{"AllToolsGroupedByServer", testAllToolsGroupedByServer},
		{"Offer", testOffer},
		{"ConfigHashSurvivesStoreRoundTrip", testConfigHashSurvivesStoreRoundTrip},
		{"RecordSuccessMerge", testRecordSuccessMerge},
		{"ToolsHash", testToolsHash},
		{"PolicySurvivesReverification", testPolicySurvivesReverification},
		{"SetPolicyDoesNotApproveChangedTool", testSetPolicyDoesNotApproveChangedTool},
		{"SetPolicyErrors", testSetPolicyErrors},
		{"FailureKeepsLastGoodTools", testFailureKeepsLastGoodTools},
		{"ConfigChangedWhileVerifying", testConfigChangedWhileVerifying},
		{"RenameWhileVerifyingIsAccepted", testRenameWhileVerifyingIsAccepted},
		{"ChangesAfterCommit", testChangesAfterCommit},
		{"ConcurrentUse", testConcurrentUse},
		{"ConfirmLaunch", testConfirmLaunch},
		{"ConfirmedLaunchKept", testConfirmedLaunchKept},
		{"AgentNames", testAgentNames},
		{"AgentNamesManyCollisions", testAgentNamesManyCollisions},
		{"LongAgentNamesShortened", testLongAgentNamesShortened},
		{"CallsKeptNewestFirstAndBounded", testCallsKeptNewestFirstAndBounded},
		{"RecordCallArguments", testRecordCallArguments},
		{"ServerAsksKept", testServerAsksKept},
		{"MCPTokenKeptAndRotated", testMCPTokenKeptAndRotated},
		{"Grants", testGrants},
		{"ClientTokens", testClientTokens},
		{"Profiles", testProfiles},
		{"ProfileInUse", testProfileInUse},
		{"BrowserSessions", testBrowserSessions},
		{"MCPSessions", testMCPSessions},
		{"People", testPeople},
		{"PeopleAtOnce", testPeopleAtOnce},
		{"RegistryCopies", testRegistryCopies},
		{"RecordArtifact", testRecordArtifact},
		{"Decisions", testDecisions},
		{"Revision", testRevision},
		{"NewToolPolicyFollowsAnnotations", testNewToolPolicyFollowsAnnotations},
		{"PresetDecidesNewTools", testPresetDecidesNewTools},
		{"SetPolicies", testSetPolicies},
		{"HistoryAndDelta", testHistoryAndDelta},
		{"HistoryBounds", testHistoryBounds},
		{"ApproveChanges", testApproveChanges},
		{"LateDiscardKeepsNewerRecord", testLateDiscardKeepsNewerRecord},
		{"SignInRequiredIsItsOwnState", testSignInRequiredIsItsOwnState},
		{"ListedMergeAndApprove", testListedMergeAndApprove},
		{"ListedChangesCounted", testListedChangesCounted},
		{"ListedApproveAll", testListedApproveAll},
		{"SealedSecrets", testSealedSecrets},
		{"ResealKeepsConcurrentChanges", testResealKeepsConcurrentChanges},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, b) })
	}
}
