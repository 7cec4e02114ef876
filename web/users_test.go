package web

import (
	"fmt"
	"html"
	"net/http"
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
