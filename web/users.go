package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/views"
)

func (s *Server) listUsers(c echo.Context) error {
	return s.renderUsers(c, http.StatusOK, views.Users{})
}

// renderUsers shows the users page with v's one-time secret or error.
func (s *Server) renderUsers(c echo.Context, status int, v views.Users) error {
	users, err := models.ListUsers(s.requestDB(c))
	if err != nil {
		return err
	}
	tokens, err := models.ListAPITokens(s.requestDB(c))
	if err != nil {
		return err
	}
	me := currentUser(c)
	for _, u := range users {
		row := views.UserRow{Email: u.Email, Role: string(u.Role), Disabled: u.Disabled(), CreatedAt: u.CreatedAt, IsSelf: u.ID == me.ID}
		if u.LastSignInAt != nil {
			row.LastSignInAt = *u.LastSignInAt
		}
		v.Users = append(v.Users, row)
	}
	for _, t := range tokens {
		row := views.TokenRow{Name: t.Name, CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt, Revoked: t.RevokedAt != nil}
		if t.LastUsedAt != nil {
			row.LastUsedAt = *t.LastUsedAt
		}
		v.Tokens = append(v.Tokens, row)
	}
	for _, r := range models.Roles {
		v.Roles = append(v.Roles, string(r))
	}
	return s.renderStatus(c, status, views.UsersPage(s.page(c, "Users", "/users"), v))
}

func (s *Server) addUser(c echo.Context) error {
	email := c.FormValue("email")
	role, err := models.ParseRole(c.FormValue("role"))
	if err != nil {
		return s.renderUsers(c, http.StatusBadRequest, views.Users{Error: err.Error()})
	}
	password := models.NewSecret(15)
	u, err := models.CreateUser(s.requestDB(c), email, role, password, s.clock.Now())
	var inv *models.InvalidError
	switch {
	case errors.As(err, &inv):
		return s.renderUsers(c, http.StatusBadRequest, views.Users{Error: inv.Reason})
	case errors.Is(err, models.ErrConflict):
		return s.renderUsers(c, http.StatusConflict, views.Users{Error: "A user with that email already exists."})
	case err != nil:
		return err
	}
	s.audit(c, action.UserAdd, u.Email, models.OutcomeSuccess, "role "+string(u.Role))
	return s.renderUsers(c, http.StatusOK, views.Users{Secret: password,
		SecretLabel: "Password for " + u.Email + ":"})
}

func (s *Server) disableUser(c echo.Context) error {
	u, err := s.otherUser(c, action.UserDisable, "You cannot disable your own account; ask another admin.")
	if err != nil {
		return err
	}
	if !confirmed(c) {
		return s.render(c, views.ConfirmPage(s.page(c, "Disable a user", "/users"), views.Confirm{
			Question: "Disable " + u.Email + "?",
			Explain:  u.Email + " is signed out everywhere and can no longer sign in. Their entries in the audit log stay.",
			Action:   "/users/disable", Field: "email", Value: u.Email, Button: "Disable " + u.Email}))
	}
	if _, err := models.DisableUser(s.requestDB(c), u.Email, s.clock.Now()); err != nil {
		return s.lastAdmin(c, err, u, action.UserDisable, "disable them")
	}
	s.audit(c, action.UserDisable, u.Email, models.OutcomeSuccess, "")
	return c.Redirect(http.StatusSeeOther, "/users?done=user-disabled")
}

// enableUser lets a disabled user sign in again. It needs no confirmation:
// disabling again undoes it.
func (s *Server) enableUser(c echo.Context) error {
	u, ok, err := models.EnableUser(s.requestDB(c), c.FormValue("email"), s.clock.Now())
	if err != nil {
		return err
	}
	if !ok {
		return c.Redirect(http.StatusSeeOther, "/users?done=user-not-disabled")
	}
	s.audit(c, action.UserEnable, u.Email, models.OutcomeSuccess, "")
	return c.Redirect(http.StatusSeeOther, "/users?done=user-enabled")
}

func (s *Server) createToken(c echo.Context) error {
	token, t, err := models.CreateAPIToken(s.requestDB(c), c.FormValue("name"), currentUser(c).Email, s.clock.Now())
	var inv *models.InvalidError
	switch {
	case errors.As(err, &inv):
		return s.renderUsers(c, http.StatusBadRequest, views.Users{Error: inv.Reason})
	case errors.Is(err, models.ErrConflict):
		return s.renderUsers(c, http.StatusConflict, views.Users{Error: "A token with that name already exists; pick another name."})
	case err != nil:
		return err
	}
	s.audit(c, action.TokenCreate, t.Name, models.OutcomeSuccess, "")
	return s.renderUsers(c, http.StatusOK, views.Users{Secret: token, SecretLabel: "API token " + t.Name + ":"})
}

func (s *Server) revokeToken(c echo.Context) error {
	name := c.FormValue("name")
	if !confirmed(c) {
		return s.render(c, views.ConfirmPage(s.page(c, "Revoke an API token", "/users"), views.Confirm{
			Question: "Revoke the API token " + name + "?",
			Explain:  "Every call with this token is refused from now on: the application that uses it stops feeding records until it is given a new token.",
			Action:   "/tokens/revoke", Field: "name", Value: name, Button: "Revoke " + name}))
	}
	if err := models.RevokeAPIToken(s.requestDB(c), name, s.clock.Now()); err != nil {
		return err
	}
	s.audit(c, action.TokenRevoke, name, models.OutcomeSuccess, "")
	return c.Redirect(http.StatusSeeOther, "/users?done=token-revoked")
}

func (s *Server) changeRole(c echo.Context) error {
	u, err := s.otherUser(c, action.UserRole, "You cannot change your own role; ask another admin.")
	if err != nil {
		return err
	}
	role, err := models.ParseRole(c.FormValue("role"))
	if err != nil {
		return err
	}
	if _, err := models.SetRole(s.requestDB(c), u.Email, role, s.clock.Now()); err != nil {
		return s.lastAdmin(c, err, u, action.UserRole, "make them "+string(role))
	}
	s.audit(c, action.UserRole, u.Email, models.OutcomeSuccess, "role "+string(role))
	return c.Redirect(http.StatusSeeOther, "/users?done=role-changed")
}

func (s *Server) resetPassword(c echo.Context) error {
	if !confirmed(c) {
		u, err := models.UserByEmail(s.requestDB(c), c.FormValue("email"))
		if err != nil {
			return err
		}
		return s.render(c, views.ConfirmPage(s.page(c, "Reset a password", "/users"), views.Confirm{
			Question: "Reset the password of " + u.Email + "?",
			Explain:  "Their password stops working and they are signed out everywhere. The new password is shown once, here: pass it on to them.",
			Action:   "/users/reset", Field: "email", Value: u.Email, Button: "Reset the password"}))
	}
	password := models.NewSecret(15)
	u, err := models.ResetPassword(s.requestDB(c), c.FormValue("email"), password, s.clock.Now())
	if err != nil {
		return err
	}
	s.audit(c, action.UserResetPassword, u.Email, models.OutcomeSuccess, "")
	return s.renderUsers(c, http.StatusOK, views.Users{Secret: password,
		SecretLabel: "New password for " + u.Email + " (their sessions are ended):"})
}

// confirmed reports whether the form is the answer to a confirm page's
// question; without it, an action that cannot be undone asks first.
func confirmed(c echo.Context) bool { return c.FormValue("confirm") == "1" }

// otherUser reads the user a form on the users page names. It refuses the
// admin's own account, compared by id: the same address typed with other
// case or spaces names the same person.
func (s *Server) otherUser(c echo.Context, action, refusal string) (*models.User, error) {
	u, err := models.UserByEmail(s.requestDB(c), c.FormValue("email"))
	if err != nil {
		return nil, err
	}
	if u.ID == currentUser(c).ID {
		s.audit(c, action, u.Email, models.OutcomeDenied, "own account")
		return nil, errBadRequest(refusal)
	}
	return u, nil
}

// lastAdmin says, in words, why the only active admin cannot be demoted or
// disabled (models decides it, in the change's own transaction), and
// passes any other error on.
func (s *Server) lastAdmin(c echo.Context, err error, u *models.User, action, change string) error {
	if !errors.Is(err, models.ErrLastAdmin) {
		return err
	}
	s.audit(c, action, u.Email, models.OutcomeDenied, change+": last active admin")
	return errBadRequest(u.Email + " is the only active admin, so you cannot " + change + ": nobody could manage users any more. Make someone else admin first.")
}
