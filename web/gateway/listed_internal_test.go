package gateway

import (
	"errors"
	"strings"
	"testing"

	"github.com/yosida95/uritemplate/v3"

	"github.com/switchboard-dev/switchboard/store"
)

// A resource the server lists but that is not offered (policy deny) is
// refused with its own reason, never read through an offered template
// of the same server that matches its URI (issue 34, M1); another URI
// of the template still is.
func TestWithheldResourceNotReadThroughTemplate(t *testing.T) {
	tmpl, err := uritemplate.New("test://template/{id}/data")
	if err != nil {
		t.Fatal(err)
	}
	entries := []*offeredListed{
		{ref: store.ListedRef{ServerID: "s", Kind: store.KindResourceTemplate, Key: tmpl.Raw()}, offered: NamespacedURI("s", tmpl.Raw()), tmpl: tmpl, def: []byte(`{}`)},
		{ref: store.ListedRef{ServerID: "s", Kind: store.KindResource, Key: "test://template/7/data"}, offered: NamespacedURI("s", "test://template/7/data"),
			withheld: "the resource's policy is deny"},
	}
	l := buildListing(store.Profile{ID: store.DefaultProfile}, entries)
	for _, uri := range []string{NamespacedURI("s", "test://template/7/data"), "test://template/7/data"} {
		_, _, err := l.resource(uri)
		var no *notOffered
		if !errors.As(err, &no) || !strings.Contains(no.message, "policy is deny") {
			t.Errorf("resource(%q) = %v; want refused for its policy", uri, err)
		}
	}
	if ol, upstream, err := l.resource(NamespacedURI("s", "test://template/8/data")); err != nil || ol.tmpl == nil || upstream != "test://template/8/data" {
		t.Errorf("resource of another id = %v, %q, %v; want it read through the template", ol, upstream, err)
	}
	if strings.Contains(string(l.lists["resources/list"]), "template/7") {
		t.Error("the withheld resource is listed")
	}
}

// A ui:// URI that names a server of the view is that server's or
// nothing: never another server's page, though another server has a
// resource of that very URI, or a template that matches it (an MCP App's
// page would render with the first server's tool data).
func TestAUIURIOfAServerIsNeverAnothers(t *testing.T) {
	everything, err := uritemplate.New("ui://{+path}")
	if err != nil {
		t.Fatal(err)
	}
	entries := []*offeredListed{
		// a offers an app page; b has one at the URI a's unlisted page
		// would be offered under, and a template matching everything.
		{ref: store.ListedRef{ServerID: "a", Kind: store.KindResource, Key: "ui://clock/app.html"}, offered: NamespacedURI("a", "ui://clock/app.html"), def: []byte(`{}`)},
		{ref: store.ListedRef{ServerID: "b", Kind: store.KindResource, Key: "ui://a/other.html"}, offered: NamespacedURI("b", "ui://a/other.html"), def: []byte(`{}`)},
		{ref: store.ListedRef{ServerID: "b", Kind: store.KindResourceTemplate, Key: everything.Raw()}, offered: NamespacedURI("b", everything.Raw()), tmpl: everything, def: []byte(`{}`)},
	}
	l := buildListing(store.Profile{ID: store.DefaultProfile}, entries)
	if ol, upstream, err := l.resource("ui://a/clock/app.html"); err != nil || ol.ref.ServerID != "a" || upstream != "ui://clock/app.html" {
		t.Errorf("a's page = %v, %q, %v; want a's", ol, upstream, err)
	}
	var no *notOffered
	if ol, _, err := l.resource("ui://a/other.html"); !errors.As(err, &no) {
		t.Errorf("a page a does not offer = %+v, %v; want none, not b's", ol, err)
	}
	// A ui:// URI that names no server of the view is a server's own.
	if ol, _, err := l.resource("ui://nobody/x.html"); err != nil || ol.ref.ServerID != "b" {
		t.Errorf("a server's own ui:// URI = %+v, %v; want b's template", ol, err)
	}
}
