package discovery

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits bound one verification. Zero fields take the defaults.
type Limits struct {
	InitTimeout     time.Duration // start + initialize
	ListTimeout     time.Duration // the whole tools/list walk
	DiscoverTimeout time.Duration // mcp-go's server/discover probe
	Grace           time.Duration // per stop step (stdin close, SIGTERM)
	MessageBytes    int           // one message
	TotalBytes      int64         // everything read in one verification; in each WatchWindow of a watch
	MaxPages        int
	MaxTools        int
	StderrBytes     int
	// A tool over one of these is kept as ToolOversized, without the
	// part that is too big.
	SchemaBytes      int // one input or output schema
	SchemaDepth      int // nesting of one schema
	DescriptionBytes int // stored description (the rest is cut)
	TitleBytes       int // stored title (the rest is cut)
	AnnotationsBytes int // annotations (JSON; not kept when over)
	ToolBytes        int // the whole tool object
	// Text about the server over one of these is cut, with a warning.
	ServerInfoBytes   int // serverInfo name, and version, each
	InstructionsBytes int // the server's instructions
}

// DefaultLimits are the limits of docs/architecture.md.
var DefaultLimits = Limits{
	InitTimeout:     30 * time.Second,
	ListTimeout:     30 * time.Second,
	DiscoverTimeout: 500 * time.Millisecond,
	Grace:           2 * time.Second,
	MessageBytes:    4 << 20,
	TotalBytes:      16 << 20,
	MaxPages:        100,
	MaxTools:        1000,
	StderrBytes:     8 << 10,

	SchemaBytes:      64 << 10,
	SchemaDepth:      32,
	DescriptionBytes: 16 << 10,
	TitleBytes:       1 << 10,
	AnnotationsBytes: 16 << 10,
	ToolBytes:        256 << 10,

	ServerInfoBytes:   256,
	InstructionsBytes: 16 << 10,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.DiscoverTimeout != 0 { // any set value goes to client.WithDiscoverTimeout as is
		d.DiscoverTimeout = l.DiscoverTimeout
	}
	return Limits{
		InitTimeout:       orDefault(l.InitTimeout, d.InitTimeout),
		ListTimeout:       orDefault(l.ListTimeout, d.ListTimeout),
		DiscoverTimeout:   d.DiscoverTimeout,
		Grace:             orDefault(l.Grace, d.Grace),
		MessageBytes:      orDefault(l.MessageBytes, d.MessageBytes),
		TotalBytes:        orDefault(l.TotalBytes, d.TotalBytes),
		MaxPages:          orDefault(l.MaxPages, d.MaxPages),
		MaxTools:          orDefault(l.MaxTools, d.MaxTools),
		StderrBytes:       orDefault(l.StderrBytes, d.StderrBytes),
		SchemaBytes:       orDefault(l.SchemaBytes, d.SchemaBytes),
		SchemaDepth:       orDefault(l.SchemaDepth, d.SchemaDepth),
		DescriptionBytes:  orDefault(l.DescriptionBytes, d.DescriptionBytes),
		TitleBytes:        orDefault(l.TitleBytes, d.TitleBytes),
		AnnotationsBytes:  orDefault(l.AnnotationsBytes, d.AnnotationsBytes),
		ToolBytes:         orDefault(l.ToolBytes, d.ToolBytes),
		ServerInfoBytes:   orDefault(l.ServerInfoBytes, d.ServerInfoBytes),
		InstructionsBytes: orDefault(l.InstructionsBytes, d.InstructionsBytes),
	}
}

// orDefault returns v if it is set (positive), else def.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// limitFields names every limit for Set, with what it holds.
var limitFields = map[string]struct {
	help string
	of   func(*Limits) any // *time.Duration, *int or *int64
}{
	"init":         {"start + initialize deadline (duration)", func(l *Limits) any { return &l.InitTimeout }},
	"list":         {"tools/list walk deadline (duration)", func(l *Limits) any { return &l.ListTimeout }},
	"discover":     {"server/discover probe deadline of a stdio server; a remote one gets the init deadline (duration)", func(l *Limits) any { return &l.DiscoverTimeout }},
	"grace":        {"each stop step: stdin closed, SIGTERM (duration)", func(l *Limits) any { return &l.Grace }},
	"message":      {"one message (bytes)", func(l *Limits) any { return &l.MessageBytes }},
	"total":        {"all bytes of one verification, and of each minute of a watch (bytes)", func(l *Limits) any { return &l.TotalBytes }},
	"pages":        {"tools/list pages", func(l *Limits) any { return &l.MaxPages }},
	"tools":        {"tools per server", func(l *Limits) any { return &l.MaxTools }},
	"stderr":       {"stderr kept (bytes)", func(l *Limits) any { return &l.StderrBytes }},
	"schema":       {"one tool schema (bytes)", func(l *Limits) any { return &l.SchemaBytes }},
	"schema-depth": {"nesting of one tool schema", func(l *Limits) any { return &l.SchemaDepth }},
	"description":  {"stored description (bytes)", func(l *Limits) any { return &l.DescriptionBytes }},
	"title":        {"stored tool title (bytes)", func(l *Limits) any { return &l.TitleBytes }},
	"annotations":  {"tool annotations (bytes)", func(l *Limits) any { return &l.AnnotationsBytes }},
	"tool":         {"one tool object (bytes)", func(l *Limits) any { return &l.ToolBytes }},
	"server-info":  {"serverInfo name, and version (bytes each)", func(l *Limits) any { return &l.ServerInfoBytes }},
	"instructions": {"the server's instructions (bytes)", func(l *Limits) any { return &l.InstructionsBytes }},
}

// LimitNames returns the names Set knows, each with what it sets and its
// default, one per line, for help texts.
func LimitNames() string {
	names := make([]string, 0, len(limitFields))
	for name := range limitFields {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	d := DefaultLimits
	for _, name := range names {
		f := limitFields[name]
		fmt.Fprintf(&b, "  %-13s %s, default %v\n", name, f.help, deref(f.of(&d)))
	}
	return b.String()
}

func deref(p any) any {
	switch v := p.(type) {
	case *time.Duration:
		return *v
	case *int:
		return *v
	case *int64:
		return *v
	}
	return p
}

// Set sets the limit called name from text: a duration ("45s") for the
// deadlines, a size ("4MiB", "64KiB", "1000") for bytes, a whole number
// for counts. Values must be positive.
func (l *Limits) Set(name, text string) error {
	f, ok := limitFields[name]
	if !ok {
		known := make([]string, 0, len(limitFields))
		for n := range limitFields {
			known = append(known, n)
		}
		sort.Strings(known)
		return fmt.Errorf("unknown limit %q (known: %s)", name, strings.Join(known, ", "))
	}
	switch p := f.of(l).(type) {
	case *time.Duration:
		d, err := time.ParseDuration(text)
		if err != nil || d <= 0 {
			return fmt.Errorf("limit %s=%q: want a positive duration such as 45s", name, text)
		}
		*p = d
	case *int, *int64:
		n, err := parseSize(text)
		if err != nil || n <= 0 {
			return fmt.Errorf("limit %s=%q: want a positive whole number (sizes may end in KiB, MiB or GiB)", name, text)
		}
		if ip, isInt := p.(*int); isInt {
			*ip = int(n)
		} else {
			*p.(*int64) = n
		}
	}
	return nil
}

// parseSize reads a whole number with an optional KiB, MiB or GiB suffix.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if rest, ok := strings.CutSuffix(s, suffix); ok {
			s, mult = rest, m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, err
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("%d is too large", n)
	}
	return n * mult, nil
}

// byteBudget bounds how many bytes a server may send: Limits.TotalBytes
// in all for a verification, or in each window for a held session (see
// WatchWindow), whose life has no end to count against. It is safe for
// concurrent use: an HTTP client reads several bodies at once.
type byteBudget struct {
	max    int64
	window time.Duration    // 0: max bounds everything, for good
	now    func() time.Time // time.Now, but for tests

	mu    sync.Mutex
	used  int64
	start time.Time // of the current window
}

func newByteBudget(max int64, window time.Duration) *byteBudget {
	return &byteBudget{max: max, window: window, now: time.Now}
}

// room returns how many more bytes may be read now; none (0 or less) once
// the budget is spent.
func (b *byteBudget) room() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.roll()
	return b.max - b.used
}

// use counts n bytes read and reports whether they were within the
// budget.
func (b *byteBudget) use(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.roll()
	b.used += int64(n)
	return b.used <= b.max
}

// roll starts a new window once the current one is over. Windows are
// fixed, not sliding: a server may send up to twice max across the end
// of one, which is as good a bound and costs nothing to keep.
func (b *byteBudget) roll() {
	if b.window <= 0 {
		return
	}
	if now := b.now(); b.start.IsZero() || now.Sub(b.start) >= b.window {
		b.start, b.used = now, 0
	}
}

// exceeded is the error for a spent budget.
func (b *byteBudget) exceeded() errTooLarge {
	if b.window <= 0 {
		return errTooLarge{fmt.Sprintf("server sent more than %d bytes in one verification", b.max)}
	}
	return errTooLarge{fmt.Sprintf("server sent more than %d bytes within %s", b.max, b.window)}
}
