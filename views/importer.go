package views

// ImportView is the Import page: the text to import, the files found on
// this machine, and the dry run or the error.
type ImportView struct {
	Text    string
	Format  string // "" for detect
	Formats []string
	Known   []KnownFile
	// Error is why the text could not be read at all; ErrorLine and
	// ErrorCol point at it (0 if unknown), Excerpt shows that line.
	Error     string
	ErrorLine int
	ErrorCol  int
	Excerpt   string
	Caret     string // spaces up to the column, then ^
	Plan      *ImportPlanView
	// Servers are the ids the export can choose from.
	Servers []string
	// Source is the file the text came from ("" if pasted).
	Source string
}

// KnownFile is a client config found on this machine.
type KnownFile struct {
	Key    string // opaque: the server reads the path from its own list
	Path   string
	Client string
	Format string
}

// ImportPlanView is the dry run.
type ImportPlanView struct {
	// HeldID names the previewed text, which the server holds.
	HeldID   string
	Format   string
	Rows     []ImportRowView
	Warnings []string
	Add      int
	Update   int
	Same     int
	Errors   int
}

// ImportRowView is one entry of the dry run.
type ImportRowView struct {
	Index       int // opaque name of the row's choice: choice-<Index>
	Fingerprint string
	Name        string
	ID          string
	Action      string
	Choice      string
	NewID       string
	Line        int
	Col         int
	Target      string
	Diff        []FieldChange
	Secrets     []string
	Refs        []string
	Notes       []string
	Errors      []string
}

// FieldChange is one field an import would change.
type FieldChange struct {
	Field, Old, New string
}

func choiceName(r ImportRowView) string { return "choice-" + itoa(r.Index) }

func fingerprintName(r ImportRowView) string { return "fp-" + itoa(r.Index) }

func importFormatLabel(f string) string {
	switch f {
	case "":
		return "detect"
	case "claude":
		return "Claude Desktop / Claude Code / Windsurf (mcpServers)"
	case "cursor":
		return "Cursor (mcpServers)"
	case "vscode":
		return "VS Code (servers, inputs)"
	case "codex":
		return "Codex (config.toml)"
	}
	return f
}
