package serverconfig

import "testing"

func TestMaskURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://h/mcp":                                   "https://h/mcp",
		"https://h/mcp?region=eu&page=2":                  "https://h/mcp?region=eu&page=2",
		"https://h/mcp?api_key=s&region=eu":               "https://h/mcp?api_key=********&region=eu",
		"https://h/mcp?token=s&access_token=t&apiKey=u":   "https://h/mcp?token=********&access_token=********&apiKey=********",
		"https://h/mcp?x-api-key=s&sig=t&client_secret=u": "https://h/mcp?x-api-key=********&sig=********&client_secret=********",
		"https://u:pw@h/mcp":                              "https://u:%2A%2A%2A%2A%2A%2A%2A%2A@h/mcp",
		"https://h/mcp?monkey=banana":                     "https://h/mcp?monkey=banana",
		"::not a url":                                     "::not a url",
	} {
		if got := MaskURL(in); got != want {
			t.Errorf("MaskURL(%q) = %q; want %q", in, got, want)
		}
	}
	old := "https://h/mcp?token=s"
	if got := KeepMaskedURL(MaskURL(old), old); got != old {
		t.Errorf("KeepMaskedURL(masked) = %q; want the stored %q", got, old)
	}
	if got := KeepMaskedURL("https://h/mcp?token=new", old); got != "https://h/mcp?token=new" {
		t.Errorf("KeepMaskedURL(a new URL) = %q; want it", got)
	}
}
