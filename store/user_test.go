package store_test

import (
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// Roles allow what the ones below them do, and nothing is allowed to an
// unknown role.
func TestRoles(t *testing.T) {
	for _, c := range []struct {
		r, need store.Role
		ok      bool
	}{
		{store.RoleAdmin, store.RoleViewer, true}, {store.RoleAdmin, store.RoleAdmin, true},
		{store.RoleApprover, store.RoleApprover, true}, {store.RoleApprover, store.RoleAdmin, false},
		{store.RoleViewer, store.RoleApprover, false}, {store.RoleViewer, store.RoleViewer, true},
		{"root", store.RoleViewer, false}, {"", store.RoleViewer, false},
	} {
		if got := c.r.Allows(c.need); got != c.ok {
			t.Errorf("%q.Allows(%q) = %v; want %v", c.r, c.need, got, c.ok)
		}
	}
}
