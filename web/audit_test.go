package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// "admin" finds admin@example.com; the action is picked from a list in
// words; the detail shows; a link target leads to the link's page.
func TestAuditFiltersAsAPersonTypes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		at := b.clock.Now().Add(-time.Minute)
		for _, e := range []models.AuditEntry{
			{Actor: "admin@example.com", Action: "link.mark_failed", Target: "link 304", Outcome: models.OutcomeSuccess, Detail: "customer cancelled"},
			{Actor: "api:Shop", Action: "record.upsert", Target: "order 9", Outcome: models.OutcomeSuccess, Detail: "queued 6 links"},
			{Actor: "bob@example.com", Action: "link.sync", Target: "link 5", Outcome: models.OutcomeSuccess},
		} {
			e.At = at
			require.NoError(t, models.Audit(db, e))
		}
		c := b.signedIn("root@example.com", models.RoleAdmin)

		r := c.get("/audit?actor=Admin")
		text := pageText(r.body)
		require.Contains(t, text, "admin@example.com", "a prefix of the address, any case")
		require.NotContains(t, text, "bob@example.com")
		require.Contains(t, text, "customer cancelled", "the detail is a column")
		require.Contains(t, r.body, `href="/links/304" data-testid="audit-target"`)

		require.Contains(t, pageText(c.get("/audit?actor=api:Sh").body), "queued 6 links")
		require.Contains(t, pageText(c.get("/audit?actor=a_min").body), "No audit entries match", "_ is not a wildcard")

		r = c.get("/audit?action=link.sync")
		require.Contains(t, r.body, `<option value="link.sync" selected>Sync now</option>`)
		require.Contains(t, r.body, `<option value="auth.login">Sign-in</option>`)
		require.Contains(t, pageText(r.body), "bob@example.com")
		require.NotContains(t, pageText(r.body), "admin@example.com")
	})
}

// What a person typed into a reason is kept as they typed it, and shown on
// the audit page as on the record's timeline: with a customer's address
// and a pasted credential masked.
func TestAuditDetailsAreRedactedAsOnTheRecordPage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		require.NoError(t, models.Audit(db, models.AuditEntry{At: b.clock.Now().Add(-time.Minute), Actor: "ana@example.com",
			Action: "link.mark_failed", Target: "link 7", Outcome: models.OutcomeSuccess,
			Detail: "asked by ada.customer@example.org; their key was Authorization: Bearer sk_live_51HxYzSecretValue"}))
		body := b.signedIn("root@example.com", models.RoleAdmin).get("/audit").body
		require.Contains(t, pageText(body), "asked by [email]")
		require.NotContains(t, body, "ada.customer@example.org")
		require.NotContains(t, body, "sk_live_51HxYzSecretValue")
		require.Contains(t, pageText(body), "ana@example.com", "who acted is not masked")
	})
}
