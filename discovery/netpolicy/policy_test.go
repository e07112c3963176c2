package netpolicy

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestAddrClass(t *testing.T) {
	for _, c := range []struct {
		addr string
		want Class
	}{
		{"169.254.169.254", ClassForbidden},
		{"::ffff:169.254.169.254", ClassForbidden},
		{"64:ff9b::a9fe:a9fe", ClassForbidden}, // NAT64 of 169.254.169.254
		{"fe80::1", ClassForbidden},
		{"fd00:ec2::254", ClassForbidden},
		{"100.100.100.200", ClassForbidden},
		{"168.63.129.16", ClassForbidden},
		{"127.0.0.1", ClassLoopback},
		{"127.1.2.3", ClassLoopback},
		{"::1", ClassLoopback},
		{"0.0.0.0", ClassLoopback},
		{"::", ClassLoopback},
		{"64:ff9b::7f00:1", ClassLoopback}, // NAT64 of 127.0.0.1
		{"10.0.0.1", ClassPrivate},
		{"172.16.5.4", ClassPrivate},
		{"192.168.1.10", ClassPrivate},
		{"100.64.0.1", ClassPrivate},
		{"fd12:3456::1", ClassPrivate},
		{"93.184.216.34", ClassPublic},
		{"2606:4700::1111", ClassPublic},
	} {
		if got := AddrClass(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("AddrClass(%s) = %v; want %v", c.addr, got, c.want)
		}
	}
}

func TestForbiddenAddresses(t *testing.T) {
	for addr, want := range map[string]bool{
		"169.254.169.254":        true,
		"::ffff:169.254.169.254": true,
		"fe80::1":                true,
		"fd00:ec2::254":          true,
		"100.100.100.200":        true,
		"127.0.0.1":              false,
		"10.0.0.1":               false,
		"::1":                    false,
		"93.184.216.34":          false,
	} {
		if got := forbidden(netip.MustParseAddr(addr)); got != want {
			t.Errorf("forbidden(%s) = %v, want %v", addr, got, want)
		}
	}
}

// New takes only http and https URLs with a host.
func TestNewRefusesOtherURLs(t *testing.T) {
	for _, raw := range []string{"ftp://example.com/", "http:///path", "://bad", "file:///etc/passwd"} {
		if _, err := New(raw, nil); err == nil {
			t.Errorf("New(%q) succeeded", raw)
		}
	}
	p, err := New("HTTP://Example.COM/mcp", nil)
	if err != nil || p.Origin() != "http://example.com:80" {
		t.Errorf("New = %v, %v; want the origin http://example.com:80", p, err)
	}
}

// A metadata address is never dialled: the refusal is a network one that
// names it, before any connection.
func TestMetadataNeverDialled(t *testing.T) {
	p, err := New("http://169.254.169.254/latest/meta-data/", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Client().Get("http://169.254.169.254/latest/meta-data/")
	var r *RefusedError
	if !errors.As(err, &r) || r.Kind != "network" || !errors.Is(err, ErrForbiddenAddress) || !strings.Contains(r.Message, "169.254.169.254") {
		t.Errorf("GET of the metadata address = %v; want a network refusal naming it", err)
	}
}

// A POST redirected to another origin is refused as a redirect
// ("protocol"), and the other origin hears nothing.
func TestPostRedirectToAnotherOriginRefused(t *testing.T) {
	heard := false
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { heard = true }))
	defer other.Close()
	origin := httptest.NewServer(http.RedirectHandler(other.URL+"/x", http.StatusTemporaryRedirect))
	defer origin.Close()
	p, err := New(origin.URL, map[string]string{"X-Api-Key": "secret"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Client().Post(origin.URL, "application/json", strings.NewReader("{}"))
	var r *RefusedError
	if !errors.As(err, &r) || r.Kind != "protocol" || !strings.Contains(r.Message, "another origin") {
		t.Errorf("POST redirected to another origin = %v; want a refused redirect", err)
	}
	if heard {
		t.Error("the other origin was reached")
	}
}
