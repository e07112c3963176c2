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
