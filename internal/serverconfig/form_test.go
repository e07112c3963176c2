package serverconfig

import (
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// The form takes the start timeout in seconds, decimals allowed, and
// stores milliseconds; anything else is refused with the unit and range.
func TestFormTimeoutSeconds(t *testing.T) {
	for _, tc := range []struct {
		name, typed string
		wantMS      int
		wantErr     bool
	}{
		{name: "whole", typed: "30", wantMS: 30000},
		{name: "decimal point", typed: "2.5", wantMS: 2500},
		{name: "decimal comma", typed: "2,5", wantMS: 2500},
		{name: "milliseconds", typed: "1.234", wantMS: 1234},
		{name: "spaces around", typed: " 120 ", wantMS: 120000},
		{name: "lowest", typed: "1", wantMS: 1000},
		{name: "below range", typed: "0.5", wantErr: true},
		{name: "above range", typed: "120.001", wantErr: true},
		{name: "too precise", typed: "2.5001", wantErr: true},
		{name: "not a number", typed: "soon", wantErr: true},
		{name: "NaN", typed: "NaN", wantErr: true},
		{name: "exponent", typed: "1e1", wantErr: true},
		{name: "negative", typed: "-5", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := FormInput(url.Values{"id": {"x"}, "transport": {"stdio"}, "command": {"true"}, "timeout_s": {tc.typed}})
			s, errs := Validate(in, nil)
			msg, bad := errs["timeout_s"]
			if bad != tc.wantErr {
				t.Fatalf("Validate(timeout_s=%q) errors = %v; want error %v", tc.typed, errs, tc.wantErr)
			}
			if bad && (!strings.Contains(msg, "seconds") || !strings.Contains(msg, "from 1 to 120")) {
				t.Errorf("Validate(timeout_s=%q) message = %q; want the unit and range", tc.typed, msg)
			}
			if !bad && s.TimeoutMS != tc.wantMS {
				t.Errorf("Validate(timeout_s=%q).TimeoutMS = %d; want %d", tc.typed, s.TimeoutMS, tc.wantMS)
			}
			if len(errs) > 1 {
				t.Errorf("Validate(timeout_s=%q) errors = %v; want at most timeout_s", tc.typed, errs)
			}
		})
	}
}

func TestSeconds(t *testing.T) {
	for ms, want := range map[int]string{0: "", 2500: "2.5", 30000: "30", 1234: "1.234", 120000: "120"} {
		if got := Seconds(ms); got != want {
			t.Errorf("Seconds(%d) = %q; want %q", ms, got, want)
		}
		if ms == 0 {
			continue
		}
		if back, ok := parseSeconds(Seconds(ms)); !ok || back != ms {
			t.Errorf("parseSeconds(Seconds(%d)) = %d, %v; want %d", ms, back, ok, ms)
		}
	}
}

// FormInput reads every field of the form; the memory cap only for stdio
// (the form hides it for remote servers), empty rows are left out.
func TestFormInput(t *testing.T) {
	v := url.Values{
		"id": {"files"}, "name": {"Files"}, "transport": {"stdio"}, "command": {"npx"},
		"args":    {"-y\r\n\r\n@mcp/files\r\n"},
		"env_key": {"TOKEN", "", "EMPTY"}, "env_value": {"v", "", ""},
		"timeout_s": {"2.5"}, "memory_mb": {"512"}, "ttl_seconds": {"600"}, "auto_refresh": {"on"},
		"default_policy": {"deny"}, "enabled": {"on"}, "cwd": {"/srv"},
	}
	got := FormInput(v)
	want := Input{
		ID: "files", Name: "Files", Transport: "stdio", Command: "npx", Args: []string{"-y", "@mcp/files"},
		Env: []KV{{"TOKEN", "v"}, {"EMPTY", ""}}, Cwd: "/srv", TimeoutSeconds: "2.5", MemoryMB: "512",
		TTLSeconds: "600", AutoRefresh: "on", DefaultPolicy: "deny", Enabled: true, OAuthScopes: []string{},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FormInput = %+v;\nwant %+v", got, want)
	}
	s, errs := Validate(got, nil)
	if len(errs) > 0 || s.TimeoutMS != 2500 || s.MemoryMB != 512 || s.TTLSeconds != 600 {
		t.Errorf("Validate(FormInput) = timeout %d ms, memory %d MiB, ttl %d s, %v; want 2500, 512, 600", s.TimeoutMS, s.MemoryMB, s.TTLSeconds, errs)
	}

	v.Set("transport", store.TransportHTTP)
	v.Set("url", "https://example.com/mcp")
	if in := FormInput(v); in.MemoryMB != "" {
		t.Errorf("FormInput(http).MemoryMB = %q; want empty (stdio only)", in.MemoryMB)
	}
}
