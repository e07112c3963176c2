package bolt

import "github.com/switchboard-dev/switchboard/internal/fileowner"

// The owner checks of the files the store trusts (see perms.go).
var (
	foreignOwner = fileowner.Foreign
	ownGroup     = fileowner.OwnGroup
)
