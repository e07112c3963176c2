package views

import "context"

// OnboardingView is what the servers list offers beside its servers: on
// an empty list, the client configs found on this machine to import all
// at once. The list's table reads it from the context (WithOnboarding),
// so that the table's callers stay as they are.
type OnboardingView struct {
	CSRF  string
	Found []FoundConfig
}

// FoundConfig is a client config found on this machine.
type FoundConfig struct {
	Client, Path string
	Servers      int    // entries it lists
	Problem      string // why it cannot be read ("" if it can)
}

// ImportableServers counts the servers Import all would read.
func (v OnboardingView) ImportableServers() int {
	n := 0
	for _, f := range v.Found {
		n += f.Servers
	}
	return n
}

type onboardingKey struct{}

// WithOnboarding returns ctx carrying v for the servers list.
func WithOnboarding(ctx context.Context, v OnboardingView) context.Context {
	return context.WithValue(ctx, onboardingKey{}, v)
}

func onboardingOf(ctx context.Context) OnboardingView {
	v, _ := ctx.Value(onboardingKey{}).(OnboardingView)
	return v
}

// unconfirmed counts the enabled servers whose launch waits for a
// person's confirmation.
func unconfirmed(servers []ServerItem) int {
	n := 0
	for _, s := range servers {
		if s.Enabled && s.NeedsConfirm {
			n++
		}
	}
	return n
}

// LaunchesView is the batch confirmation: every launch waiting for a
// person, confirmed together.
type LaunchesView struct {
	Launches []Launch
	// Notice says why the page is shown again (a launch changed).
	Notice string
	// Import is what the import before it did (nil if none).
	Import *ImportReport
}

// ImportReport is what Import all did, file by file.
type ImportReport struct {
	Added, Skipped, Failed int
	Files                  []ImportedFile
}

// ImportedFile is what Import all did with one file.
type ImportedFile struct {
	Client, Path, Problem string
	Lines                 []string
}

// plural is one or many, as n says.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func serversWord(n int) string {
	if n == 1 {
		return "1 server"
	}
	return itoa(n) + " servers"
}
