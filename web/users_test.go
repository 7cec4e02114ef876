package web

import (
	"net/http"
	"net/url"
	"regexp"
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

		r = admin.post("/users", "/users/reset", url.Values{"email": {"ana@example.com"}})
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
