package web

import (
	"context"
	"errors"
	"net/http"
	"net/mail"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// A team's people: added by an admin with a role and a personal API token
// (shown once, kept hashed), their role changed, their token made anew or
// revoked, removed. Their sign-ins name them in every record (see
// access.go).

// userJSON is a person as the API gives them.
type userJSON struct {
	ID         string     `json:"id"`
	Email      string     `json:"email"`
	Role       store.Role `json:"role"`
	HasToken   bool       `json:"has_token"`
	TokenMade  *time.Time `json:"token_made,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	CreatedBy  string     `json:"created_by,omitempty"`
	LastSignIn *time.Time `json:"last_sign_in,omitempty"`
}

func userToJSON(u store.User) userJSON {
	j := userJSON{ID: u.ID, Email: u.Email, Role: u.Role, HasToken: u.TokenHash != "", CreatedAt: u.CreatedAt, CreatedBy: u.CreatedBy}
	if !u.TokenMade.IsZero() && j.HasToken {
		j.TokenMade = &u.TokenMade
	}
	if !u.LastSignIn.IsZero() {
		j.LastSignIn = &u.LastSignIn
	}
	return j
}

// newPersonalToken makes a personal API token and what the store keeps.
func newPersonalToken() (token, hash string) {
	token = personalTokenPrefix + randomHex(32)
	return token, store.HashToken(token)
}

// addUser adds a person with a personal token made by by; per-field
// errors for a bad email or role, 409 for an email taken.
func (s *Server) addUser(ctx context.Context, email, role, by string) (store.User, string, error) {
	fields := map[string]string{}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email && addr.Address != store.NormalEmail(email) || len(email) > 254 {
		fields["email"] = "an email address, such as ann@example.com"
	}
	if !store.Role(role).Valid() {
		fields["role"] = `one of "viewer", "approver", "admin"`
	}
	if len(fields) > 0 {
		return store.User{}, "", validationError(fields)
	}
	token, hash := newPersonalToken()
	now := s.cfg.Now().UTC()
	u := store.User{ID: "u-" + randomHex(6), Email: store.NormalEmail(email), Role: store.Role(role), TokenHash: hash, TokenMade: now, CreatedAt: now, CreatedBy: by}
	if err := s.deps.Store.CreateUser(ctx, u); errors.Is(err, store.ErrUserExists) {
		return store.User{}, "", &apiError{Status: http.StatusConflict, Message: "a person with this email is here already", Fields: map[string]string{"email": "taken"}}
	} else if err != nil {
		return store.User{}, "", err
	}
	s.log.Info("person added", "email", u.Email, "role", u.Role, "by", by)
	return u, token, nil
}

// errLastAdmin refuses to leave a Switchboard whose shared token is off
// without an admin.
var errLastAdmin = &apiError{Status: http.StatusConflict, Message: "this is the last admin and the shared token is off: nobody could manage people after this; make someone else admin first"}

// lastAdmin reports whether person id is the last admin, which matters
// only when the shared token is off.
func (s *Server) lastAdmin(ctx context.Context, id string) (bool, error) {
	if !s.cfg.NoSharedToken {
		return false, nil
	}
	users, err := s.deps.Store.Users(ctx)
	if err != nil {
		return false, err
	}
	admins, isAdmin := 0, false
	for _, u := range users {
		if u.Role == store.RoleAdmin {
			admins++
			isAdmin = isAdmin || u.ID == id
		}
	}
	return isAdmin && admins == 1, nil
}

// updateUser changes person id: a role ("" keeps it), a new token
// (returned) or the token revoked.
func (s *Server) updateUser(ctx context.Context, id, role string, newToken, revoke bool, by string) (store.User, string, error) {
	if role != "" && !store.Role(role).Valid() {
		return store.User{}, "", validationError(map[string]string{"role": `one of "viewer", "approver", "admin"`})
	}
	if role != "" && role != string(store.RoleAdmin) {
		if last, err := s.lastAdmin(ctx, id); err != nil {
			return store.User{}, "", err
		} else if last {
			return store.User{}, "", errLastAdmin
		}
	}
	var token string
	u, err := s.deps.Store.UpdateUser(ctx, id, func(u *store.User) error {
		if role != "" {
			u.Role = store.Role(role)
		}
		switch {
		case newToken:
			var hash string
			token, hash = newPersonalToken()
			u.TokenHash, u.TokenMade = hash, s.cfg.Now().UTC()
		case revoke:
			u.TokenHash, u.TokenMade = "", time.Time{}
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return u, "", &apiError{Status: http.StatusNotFound, Message: "no person with this id"}
	}
	if err == nil {
		s.log.Info("person changed", "email", u.Email, "role", u.Role, "new_token", newToken, "token_revoked", revoke, "by", by)
	}
	return u, token, err
}

// deleteUser removes person id; their sessions end at their next request.
func (s *Server) deleteUser(ctx context.Context, id, by string) error {
	if last, err := s.lastAdmin(ctx, id); err != nil {
		return err
	} else if last {
		return errLastAdmin
	}
	if err := s.deps.Store.DeleteUser(ctx, id); errors.Is(err, store.ErrNotFound) {
		return &apiError{Status: http.StatusNotFound, Message: "no person with this id"}
	} else if err != nil {
		return err
	}
	s.log.Info("person removed", "id", id, "by", by)
	return nil
}

// handleAPIUsers serves GET /api/v1/users.
func (s *Server) handleAPIUsers(c echo.Context) error {
	users, err := s.deps.Store.Users(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]userJSON, 0, len(users))
	for _, u := range users {
		out = append(out, userToJSON(u))
	}
	return c.JSON(http.StatusOK, map[string]any{"users": out})
}

// handleAPIAddUser serves POST /api/v1/users {"email", "role"}: 201
// {"user", "token"}, the personal token shown this once.
func (s *Server) handleAPIAddUser(c echo.Context) error {
	var body struct {
		Email string `json:"email"`
		Role  string `json:"role"`
	}
	if err := decodeJSON(c, 4096, &body); err != nil {
		return err
	}
	u, token, err := s.addUser(c.Request().Context(), body.Email, body.Role, actorOf(c).name())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{"user": userToJSON(u), "token": token})
}

// handleAPIUpdateUser serves PUT /api/v1/users/{id} {"role", "new_token":
// true, "revoke_token": true}: {"user"}, and {"token"} when one was made.
func (s *Server) handleAPIUpdateUser(c echo.Context) error {
	var body struct {
		Role        string `json:"role"`
		NewToken    bool   `json:"new_token"`
		RevokeToken bool   `json:"revoke_token"`
	}
	if err := decodeJSON(c, 4096, &body); err != nil {
		return err
	}
	if body.NewToken && body.RevokeToken {
		return validationError(map[string]string{"new_token": "new_token and revoke_token cannot both be true"})
	}
	u, token, err := s.updateUser(c.Request().Context(), c.Param("id"), body.Role, body.NewToken, body.RevokeToken, actorOf(c).name())
	if err != nil {
		return err
	}
	out := map[string]any{"user": userToJSON(u)}
	if token != "" {
		out["token"] = token
	}
	return c.JSON(http.StatusOK, out)
}

// handleAPIDeleteUser serves DELETE /api/v1/users/{id}.
func (s *Server) handleAPIDeleteUser(c echo.Context) error {
	if err := s.deleteUser(c.Request().Context(), c.Param("id"), actorOf(c).name()); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// peopleView is what the People page shows.
func (s *Server) peopleView(c echo.Context) (views.PeopleView, error) {
	users, err := s.deps.Store.Users(c.Request().Context())
	if err != nil {
		return views.PeopleView{}, err
	}
	v := views.PeopleView{Roles: []string{string(store.RoleViewer), string(store.RoleApprover), string(store.RoleAdmin)}, SharedToken: !s.cfg.NoSharedToken}
	for _, u := range users {
		v.People = append(v.People, views.Person{ID: u.ID, Email: u.Email, Role: string(u.Role), HasToken: u.TokenHash != "",
			Created: u.CreatedAt, CreatedBy: u.CreatedBy, LastSignIn: u.LastSignIn})
	}
	return v, nil
}

// handlePeoplePage serves GET /people.
func (s *Server) handlePeoplePage(c echo.Context) error {
	v, err := s.peopleView(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.PeoplePage(s.page(c, "People"), v))
}

// renderPeople renders the page after a form: its error (per field, the
// input kept) or the token made, shown once.
func (s *Server) renderPeople(c echo.Context, status int, edit func(*views.PeopleView)) error {
	v, err := s.peopleView(c)
	if err != nil {
		return err
	}
	edit(&v)
	return render(c, status, views.PeoplePage(s.page(c, "People"), v))
}

// formError is the page's answer to a form's refusal: its fields, or its
// message; other errors go on.
func (s *Server) peopleFormError(c echo.Context, err error, edit func(*views.PeopleView)) error {
	var ae *apiError
	if !errors.As(err, &ae) {
		return err
	}
	return s.renderPeople(c, ae.Status, func(v *views.PeopleView) {
		edit(v)
		v.Error, v.Fields = ae.Message, ae.Fields
	})
}

// handleAddPersonForm serves POST /people (email, role).
func (s *Server) handleAddPersonForm(c echo.Context) error {
	email, role := c.FormValue("email"), c.FormValue("role")
	u, token, err := s.addUser(c.Request().Context(), email, role, actorOf(c).name())
	if err != nil {
		return s.peopleFormError(c, err, func(v *views.PeopleView) { v.Email, v.Role = email, role })
	}
	return s.renderPeople(c, http.StatusCreated, func(v *views.PeopleView) { v.NewToken, v.NewTokenFor = token, u.Email })
}

// handleSetRoleForm serves POST /people/:id (role).
func (s *Server) handleSetRoleForm(c echo.Context) error {
	if _, _, err := s.updateUser(c.Request().Context(), c.Param("id"), c.FormValue("role"), false, false, actorOf(c).name()); err != nil {
		return s.peopleFormError(c, err, func(*views.PeopleView) {})
	}
	return c.Redirect(http.StatusSeeOther, "/people")
}

// handleNewTokenForm serves POST /people/:id/token (revoke=1 to revoke
// instead): a new personal token, shown once.
func (s *Server) handleNewTokenForm(c echo.Context) error {
	revoke := c.FormValue("revoke") != ""
	u, token, err := s.updateUser(c.Request().Context(), c.Param("id"), "", !revoke, revoke, actorOf(c).name())
	if err != nil {
		return s.peopleFormError(c, err, func(*views.PeopleView) {})
	}
	if revoke {
		return c.Redirect(http.StatusSeeOther, "/people")
	}
	return s.renderPeople(c, http.StatusOK, func(v *views.PeopleView) { v.NewToken, v.NewTokenFor = token, u.Email })
}

// handleDeletePersonForm serves POST /people/:id/delete.
func (s *Server) handleDeletePersonForm(c echo.Context) error {
	if err := s.deleteUser(c.Request().Context(), c.Param("id"), actorOf(c).name()); err != nil {
		return s.peopleFormError(c, err, func(*views.PeopleView) {})
	}
	return c.Redirect(http.StatusSeeOther, "/people")
}
