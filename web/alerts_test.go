package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// seedIncidents opens a crm pause incident notified to two channels, one
// of which failed once, and a resolved task incident; it returns their ids.
func seedIncidents(t *testing.T, db *gorm.DB, now time.Time) (open, resolved int64) {
	t.Helper()
	change := func(state, title string, at time.Time) models.IncidentChange {
		return models.IncidentChange{State: state, Title: title, Text: "What to do about " + title, Channels: []string{"mail", "ops"}, At: at}
	}
	opened, err := models.OpenIncident(db, models.Incident{Rule: "task_failing", Subject: "prune-events", URL: "/schedules"},
		change("opened", "The scheduled task prune-events failed 3 times in a row", now.Add(-3*time.Hour)))
	require.NoError(t, err)
	require.True(t, opened)
	open, resolved = incidentID(t, db, "task_failing"), 0
	over := change("resolved", "The scheduled task prune-events failed 3 times in a row", now.Add(-2*time.Hour))
	over.Text = "This cleared at " + over.At.UTC().Format("2006-01-02 15:04") + " UTC, 1 hour after it began. Nothing more to do for it."
	ok, err := models.ResolveIncident(db, open, over)
	require.NoError(t, err)
	require.True(t, ok)
	resolved = open

	opened, err = models.OpenIncident(db, models.Incident{Rule: "service_paused", Subject: "crm", URL: "/services"},
		change("opened", "crm has been paused for 25 minutes", now.Add(-10*time.Minute)))
	require.NoError(t, err)
	require.True(t, opened)
	open = incidentID(t, db, "service_paused")
	claimed, err := models.ClaimNotifications(db, "test", now, time.Minute, 10)
	require.NoError(t, err)
	for _, n := range claimed {
		o := models.NotificationOutcome{Status: models.NotificationSent, At: now}
		if n.Channel == "ops" && n.IncidentID == open {
			o = models.NotificationOutcome{Status: models.NotificationPending, At: now, Next: now.Add(40 * time.Second),
				Error: "the receiver answered 503 Service Unavailable"}
		}
		_, err := models.FinishNotification(db, n.ID, "test", o)
		require.NoError(t, err)
	}
	return open, resolved
}

func incidentID(t *testing.T, db *gorm.DB, rule string) int64 {
	t.Helper()
	var inc models.Incident
	require.NoError(t, db.Where("rule = ?", rule).Order("id DESC").Take(&inc).Error)
	return inc.ID
}

func TestAlertsPageShowsOpenIncidentsFirstWithTheirNotifications(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		open, resolved := seedIncidents(t, db, b.clock.Now())
		viewer := b.signedIn("vic@example.com", models.RoleViewer)
		r := viewer.get("/alerts")
		require.Equal(t, http.StatusOK, r.status)
		body := r.body
		openAt := strings.Index(body, `data-testid="incident-`+itoa(open)+`"`)
		resolvedAt := strings.Index(body, `data-testid="incident-`+itoa(resolved)+`"`)
		require.True(t, openAt > 0 && resolvedAt > openAt, "the open incident comes before the one that is over")
		require.Contains(t, body, "crm has been paused for 25 minutes")
		require.Contains(t, body, "What to do about crm has been paused")
		require.Contains(t, body, "Retrying")
		require.Contains(t, body, "the receiver answered 503 Service Unavailable")
		require.Contains(t, body, "Sent ")
		require.Contains(t, body, "Over")
		require.NotContains(t, body, "Not sent: a newer notification replaced it")
		require.NotContains(t, body, `data-testid="acknowledge"`, "a viewer reads, and does not acknowledge")

		// A repeat the channel missed, replaced by a newer notification.
		repeated, err := models.RepeatIncident(db, open, b.clock.Now().Add(-10*time.Minute), models.IncidentChange{State: "still open",
			Title: "crm has been paused for 85 minutes", Text: "x", Channels: []string{"ops"}, At: b.clock.Now()})
		require.NoError(t, err)
		require.True(t, repeated)
		require.NoError(t, models.SupersedeNotifications(db, "still open")) // none newer yet
		_, err = models.ResolveIncident(db, open, models.IncidentChange{State: "resolved", Title: "crm", Text: "x", Channels: []string{"ops"}, At: b.clock.Now()})
		require.NoError(t, err)
		require.NoError(t, models.SupersedeNotifications(db, "still open"))
		require.Contains(t, viewer.get("/alerts").body, "Not sent: a newer notification replaced it")

		r = viewer.post("/alerts", "/alerts/"+itoa(open)+"/acknowledge", nil)
		require.Equal(t, http.StatusForbidden, r.status)
		inc, err := models.IncidentByID(db, open)
		require.NoError(t, err)
		require.Empty(t, inc.AcknowledgedBy)
	})
}

func TestAnOperatorAcknowledgesAnIncidentOnceAudited(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		open, resolved := seedIncidents(t, db, b.clock.Now())
		ana := b.signedIn("ana@example.com", models.RoleOperator)
		require.Contains(t, ana.get("/alerts").body, `data-testid="acknowledge"`)
		r := ana.post("/alerts", "/alerts/"+itoa(open)+"/acknowledge", nil)
		require.Equal(t, http.StatusSeeOther, r.status)
		require.Equal(t, "/alerts?done=incident-acknowledged", r.header.Get("Location"))
		page := ana.get("/alerts?done=incident-acknowledged").body
		require.Contains(t, page, "Acknowledged by ana@example.com")
		require.Contains(t, page, "Open, someone is on it")
		require.EqualValues(t, 1, b.auditCount(action.IncidentAcknowledge, models.OutcomeSuccess))

		bo := b.signedIn("bo@example.com", models.RoleOperator)
		r = bo.post("/alerts", "/alerts/"+itoa(open)+"/acknowledge", nil)
		require.Equal(t, "/alerts?done=incident-already-acknowledged", r.header.Get("Location"))
		inc, err := models.IncidentByID(db, open)
		require.NoError(t, err)
		require.Equal(t, "ana@example.com", inc.AcknowledgedBy, "the first to acknowledge stays")
		r = bo.post("/alerts", "/alerts/"+itoa(resolved)+"/acknowledge", nil)
		require.Equal(t, "/alerts?done=incident-already-acknowledged", r.header.Get("Location"), "an incident that is over is not acknowledged")
		require.EqualValues(t, 2, b.auditCount(action.IncidentAcknowledge, models.OutcomeFailure))
		require.Equal(t, http.StatusNotFound, bo.post("/alerts", "/alerts/999999/acknowledge", nil).status)
	})
}

// An incident whose page only an admin may open (a failing task: Schedules)
// sends an admin there, and tells anyone else who acts on it, instead of a
// link that would answer 403.
func TestAnIncidentOnAnAdminsPageTellsOthersWhoActs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		_, err := models.OpenIncident(db, models.Incident{Rule: "task_failing", Subject: "prune-events", URL: "/schedules"},
			models.IncidentChange{State: "opened", Title: "The scheduled task prune-events failed 3 times in a row", Text: "Fix it.", At: b.clock.Now()})
		require.NoError(t, err)
		admin := b.signedIn("root@example.com", models.RoleAdmin).get("/alerts").body
		require.Contains(t, admin, `href="/schedules">Open the page to act on it</a>`)
		for _, role := range []models.Role{models.RoleOperator, models.RoleViewer} {
			body := b.signedIn(string(role)+"@example.com", role).get("/alerts").body
			require.NotContains(t, body, `href="/schedules">Open the page`, role)
			require.Contains(t, pageText(body), "An admin acts on it, on the Schedules page.", role)
		}
	})
}

// An incident that is over says what happened, and does not tell the
// reader to act: the advice it gave while open is marked as such.
func TestAnIncidentThatIsOverSaysWhatHappenedNotWhatToDo(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		at := b.clock.Now().Add(-2 * time.Hour)
		opened, err := models.OpenIncident(db, models.Incident{Rule: "service_paused", Subject: "crm", URL: "/services"},
			models.IncidentChange{State: "opened", Title: "crm has been paused for 10 minutes",
				Text: "ana@example.com paused crm (maintenance). Resume it on Services when the provider is ready.", At: at})
		require.NoError(t, err)
		require.True(t, opened)
		id := incidentID(t, db, "service_paused")
		_, err = models.ResolveIncident(db, id, models.IncidentChange{State: "resolved", Title: "crm has been paused for 10 minutes",
			Text: "This cleared at 2026-11-29 12:30 UTC, 30 minutes after it began. Nothing more to do for it.", At: at.Add(30 * time.Minute)})
		require.NoError(t, err)

		page := b.signedIn("vic@example.com", models.RoleViewer).get("/alerts").body
		require.Contains(t, page, `<p data-testid="incident-text">This cleared at 2026-11-29 12:30 UTC, 30 minutes after it began. Nothing more to do for it.</p>`)
		require.Contains(t, page, `data-testid="incident-text-then">While it was open it said: ana@example.com paused crm (maintenance). Resume it on Services`)
		require.Equal(t, 1, strings.Count(page, "Resume it on Services when the provider is ready."), "the advice only as what it said then")
	})
}
