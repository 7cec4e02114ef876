package web

import (
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

func TestAdminChangesRoleAndResetsPassword(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		admin := b.signedIn("root@example.com", models.RoleAdmin)
		ana := b.signedIn("ana@example.com", models.RoleOperator)
		b.seedLinks(1)

		r := admin.post("/users", "/users/role", url.Values{"email": {"ana@example.com"}, "role": {"viewer"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Equal(t, http.StatusForbidden, ana.post("/links/1", "/links/1/fail", nil).status, "a viewer now")
		require.EqualValues(t, 1, b.auditCount("user.role", models.OutcomeSuccess))
		require.Equal(t, http.StatusBadRequest, admin.post("/users", "/users/role",
			url.Values{"email": {"root@example.com"}, "role": {"viewer"}}).status, "not one's own role")

		r = admin.post("/users", "/users/reset", url.Values{"email": {"ana@example.com"}, "confirm": {"1"}})
		require.Equal(t, http.StatusOK, r.status, r.body)
		m := regexp.MustCompile(`<code class="secret">([^<]+)</code>`).FindStringSubmatch(r.body)
		require.NotNil(t, m, "the new password is shown once")
		require.Equal(t, http.StatusSeeOther, ana.get("/").status, "the reset ended ana's session")
		require.Equal(t, http.StatusUnauthorized, b.client().login("ana@example.com", testPassword).status, "the old password is dead")
		require.Equal(t, http.StatusSeeOther, b.client().login("ana@example.com", m[1]).status, "the new one works")
		require.EqualValues(t, 1, b.auditCount("user.reset_password", models.OutcomeSuccess))

		viewer := b.signedIn("vic@example.com", models.RoleViewer)
		require.Equal(t, http.StatusForbidden, viewer.post("/", "/users/reset", url.Values{"email": {"root@example.com"}}).status)
	})
}

// pageText is what a page reads as: its text without tags, spaces collapsed.
func pageText(body string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tagRe.ReplaceAllString(body, ""))), " ")
}

var tagRe = regexp.MustCompile(`<[^>]*>`)

// A time and the words after it are apart: "just now by root@…", not "just nowby".
func TestTimesAreSpacedFromTheWordsAfterThem(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := reconcileServer(t, db, 0)
		id := seedRun(t, db, b.clock.Now(), 1)
		admin := b.signedIn("root@example.com", models.RoleAdmin)
		r := admin.post("/users", "/tokens", url.Values{"name": {"shop"}})
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Contains(t, pageText(admin.get("/users").body), "just now by root@example.com")

		run := pageText(admin.get(fmt.Sprintf("/reconcile/%d", id)).body)
		require.Contains(t, run, "just now (took 3 s)")
		require.Contains(t, run, "just now by test")
		require.Contains(t, pageText(admin.get("/reconcile").body), "just now by test")
	})
}

// An admin cannot demote or disable their own account by typing their
// address with other case or spaces: the form names the same person.
func TestAdminCannotChangeTheirOwnAccountUnderAnotherSpelling(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		admin := b.signedIn("root@example.com", models.RoleAdmin)
		b.user("ada@example.com", models.RoleAdmin)
		for _, spelling := range []string{"root@example.com", "Root@Example.com", "  root@example.com ", "ROOT@EXAMPLE.COM"} {
			r := admin.post("/users", "/users/role", url.Values{"email": {spelling}, "role": {"viewer"}})
			require.Equal(t, http.StatusBadRequest, r.status, "role change of %q", spelling)
			require.Contains(t, r.body, "You cannot change your own role")
			r = admin.post("/users", "/users/disable", url.Values{"email": {spelling}, "confirm": {"1"}})
			require.Equal(t, http.StatusBadRequest, r.status, "disabling %q", spelling)
			require.Contains(t, r.body, "You cannot disable your own account")
		}
		me, err := models.UserByEmail(db, "root@example.com")
		require.NoError(t, err)
		require.Equal(t, models.RoleAdmin, me.Role)
		require.False(t, me.Disabled())
		require.Equal(t, http.StatusOK, admin.get("/users").status, "still signed in, still an admin")
		require.Equal(t, int64(8), b.auditCount("user.role", models.OutcomeDenied)+b.auditCount("user.disable", models.OutcomeDenied))

		// Another admin, typed any way, can be changed.
		r := admin.post("/users", "/users/role", url.Values{"email": {" Ada@Example.com"}, "role": {"operator"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
	})
}

// The last active admin is never demoted or disabled. Through the pages an
// admin acting on another admin always leaves one; this drives the handler
// as if the acting admin had lost the role meanwhile (the race of two
// admins demoting each other), to check the guard itself.
func TestTheLastActiveAdminStays(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.user("ada@example.com", models.RoleAdmin)
		s, err := New(Deps{DB: db, Config: b.cfg, Clock: b.clock, Version: "test", Log: slog.New(slog.DiscardHandler), Outbox: b.eng})
		require.NoError(t, err)
		gone := &models.User{ID: 1 << 40, Email: "gone@example.com", Role: models.RoleOperator}
		for path, form := range map[string]url.Values{
			"/users/role":    {"email": {"ada@example.com"}, "role": {"operator"}},
			"/users/disable": {"email": {"ada@example.com"}, "confirm": {"1"}},
		} {
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			c := s.echo.NewContext(req, httptest.NewRecorder())
			c.Set(ctxUser, gone)
			h := s.changeRole
			if path == "/users/disable" {
				h = s.disableUser
			}
			err := h(c)
			p := problemFor(err)
			require.Equal(t, http.StatusBadRequest, p.Status, "%s: %v", path, err)
			require.Contains(t, p.Message, "ada@example.com is the only active admin")
		}
		ada, err := models.UserByEmail(db, "ada@example.com")
		require.NoError(t, err)
		require.Equal(t, models.RoleAdmin, ada.Role)
		require.False(t, ada.Disabled())
	})
}

// Disable, Revoke and Reset password ask first: the first click only asks,
// and changes nothing; the answer's button does it.
func TestUsersPageAsksBeforeActionsThatCannotBeUndone(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		admin := b.signedIn("root@example.com", models.RoleAdmin)
		ana := b.signedIn("ana@example.com", models.RoleOperator)
		require.Equal(t, http.StatusOK, admin.post("/users", "/tokens", url.Values{"name": {"shop"}}).status)

		for path, form := range map[string]url.Values{
			"/users/disable": {"email": {"ana@example.com"}},
			"/users/reset":   {"email": {"ana@example.com"}},
			"/tokens/revoke": {"name": {"shop"}},
		} {
			r := admin.post("/users", path, form)
			require.Equal(t, http.StatusOK, r.status, "%s: %s", path, r.body)
			require.Contains(t, r.body, `data-testid="confirm"`, path)
			require.Contains(t, r.body, `<input type="hidden" name="confirm" value="1">`, path)
			require.NotContains(t, r.body, `class="secret"`, "%s: no password before the answer", path)
		}
		require.Equal(t, http.StatusOK, ana.get("/").status, "ana is neither disabled nor reset")
		require.Zero(t, b.auditCount("user.disable", models.OutcomeSuccess)+b.auditCount("user.reset_password", models.OutcomeSuccess)+
			b.auditCount("token.revoke", models.OutcomeSuccess))

		r := admin.post("/users", "/tokens/revoke", url.Values{"name": {"shop"}, "confirm": {"1"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.EqualValues(t, 1, b.auditCount("token.revoke", models.OutcomeSuccess))

		page := admin.get("/users").body
		require.Contains(t, page, `<td class="nowrap"><time`, "Since does not wrap")
		require.NotRegexp(t, `class="btn btn-danger"`, page, "every button in the tables is the small size")
	})
}
