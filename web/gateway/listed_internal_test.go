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
