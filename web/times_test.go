package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// Support staff match the audit log and the webhook events against a
// customer's report by clock time: both show it, not only "14 s ago".
func TestHistoriesShowTheClockTime(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := pagesServer(t, db, nil)
		now := b.clock.Now()
		require.NoError(t, models.Audit(db, models.AuditEntry{At: now.Add(-14 * time.Second), Actor: "ana@example.com",
			Action: "link.retry", Target: "link 7", Outcome: models.OutcomeSuccess}))
		seedEvent(t, db, "stripe", "evt_old", "payment.updated", "applied", time.Date(2026, 11, 27, 3, 51, 17, 0, time.UTC))
		seedEvent(t, db, "stripe", "evt_new", "payment.updated", "applied", now.Add(-3*time.Second))
		c := b.signedIn("root@example.com", models.RoleAdmin)

		audit := pageText(c.get("/audit?actor=ana@example.com").body)
		require.Contains(t, audit, "11:59:46 14 s ago", "the audit row's clock time beside how long ago")

		events := pageText(c.get("/events").body)
		require.Contains(t, events, "27 Nov 03:51", "an older event shows its day and time")
		require.Contains(t, events, "11:59:57 just now", "today's event shows its time to the second")
		require.Contains(t, pageText(c.get("/events/stripe/evt_old").body), "27 Nov 03:51")
	})
}
