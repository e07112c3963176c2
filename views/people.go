package views

import "time"

// PeopleView is the People page: a team's people, the form that adds one
// (its error per field, the input kept) and a personal token just made,
// shown this once.
type PeopleView struct {
	People      []Person
	Roles       []string
	SharedToken bool // the shared API token is on (it acts as admin)
	Email, Role string
	Error       string
	Fields      map[string]string
	NewToken    string
	NewTokenFor string
}

// Person is one of a team's people.
type Person struct {
	ID, Email, Role string
	HasToken        bool
	Created         time.Time
	CreatedBy       string
	LastSignIn      time.Time
}
