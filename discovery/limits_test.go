package discovery

import (
	"strings"
	"testing"
	"time"
)

func TestLimitsSet(t *testing.T) {
	for _, c := range []struct {
		name, value string
		check       func(Limits) bool
	}{
		{"init", "45s", func(l Limits) bool { return l.InitTimeout == 45*time.Second }},
		{"grace", "250ms", func(l Limits) bool { return l.Grace == 250*time.Millisecond }},
		{"message", "8MiB", func(l Limits) bool { return l.MessageBytes == 8<<20 }},
		{"total", "1GiB", func(l Limits) bool { return l.TotalBytes == 1<<30 }},
		{"schema", "64KiB", func(l Limits) bool { return l.SchemaBytes == 64<<10 }},
		{"tools", "2000", func(l Limits) bool { return l.MaxTools == 2000 }},
		{"schema-depth", "64", func(l Limits) bool { return l.SchemaDepth == 64 }},
		{"title", "2KiB", func(l Limits) bool { return l.TitleBytes == 2<<10 }},
		{"annotations", "32KiB", func(l Limits) bool { return l.AnnotationsBytes == 32<<10 }},
		{"server-info", "512", func(l Limits) bool { return l.ServerInfoBytes == 512 }},
		{"instructions", "64KiB", func(l Limits) bool { return l.InstructionsBytes == 64<<10 }},
	} {
		var l Limits
		if err := l.Set(c.name, c.value); err != nil || !c.check(l) {
			t.Errorf("Set(%q, %q) = %v; Limits %+v", c.name, c.value, err, l)
		}
	}
	for _, c := range []struct{ name, value, want string }{
		{"bogus", "1", `unknown limit "bogus" (known: annotations, description, discover,`},
		{"tools", "0", "want a positive whole number"},
		{"tools", "-5", "want a positive whole number"},
		{"message", "4MB", "want a positive whole number"},
		{"total", "99999999999GiB", "want a positive whole number"},
		{"init", "30", "want a positive duration"},
		{"init", "-1s", "want a positive duration"},
	} {
		var l Limits
		if err := l.Set(c.name, c.value); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Set(%q, %q) = %v; want an error with %q", c.name, c.value, err, c.want)
		}
		if l != (Limits{}) {
			t.Errorf("Set(%q, %q) failed but changed %+v", c.name, c.value, l)
		}
	}
	if names := LimitNames(); strings.Count(names, "\n") != len(limitFields) || !strings.Contains(names, "tools         tools per server, default 1000") {
		t.Errorf("LimitNames() = %q", names)
	}
}

// budgetStep is one step of TestByteBudget: the clock moves on by
// advance, then n bytes are used.
type budgetStep struct {
	advance time.Duration
	n       int
	ok      bool  // use's answer
	room    int64 // room's after
}

// A verification's budget is spent for good; a watch's is renewed each
// window, so a session may receive its total many times over in all.
func TestByteBudget(t *testing.T) {
	for _, c := range []struct {
		name   string
		window time.Duration
		steps  []budgetStep
	}{
		{name: "in all", window: 0, steps: []budgetStep{
			{0, 60, true, 40}, {time.Hour, 40, true, 0}, {time.Hour, 1, false, -1},
		}},
		{name: "per window", window: time.Minute, steps: []budgetStep{
			{0, 60, true, 40}, {30 * time.Second, 40, true, 0}, {29 * time.Second, 1, false, -1},
			{time.Second, 100, true, 0}, {time.Minute, 101, false, -1},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newByteBudget(100, c.window)
			clock := time.Unix(1000, 0)
			b.now = func() time.Time { return clock }
			for i, s := range c.steps {
				clock = clock.Add(s.advance)
				if ok := b.use(s.n); ok != s.ok {
					t.Errorf("step %d: use(%d) = %v; want %v", i, s.n, ok, s.ok)
				}
				if room := b.room(); room != s.room {
					t.Errorf("step %d: room() = %d; want %d", i, room, s.room)
				}
			}
		})
	}
	for _, c := range []struct {
		window time.Duration
		want   string
	}{
		{0, "server sent more than 100 bytes in one verification"},
		{time.Minute, "server sent more than 100 bytes within 1m0s"},
	} {
		if got := newByteBudget(100, c.window).exceeded().Error(); got != c.want {
			t.Errorf("newByteBudget(100, %s).exceeded() = %q; want %q", c.window, got, c.want)
		}
	}
}
