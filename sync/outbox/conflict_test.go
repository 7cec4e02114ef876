package outbox

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/fakes/faults"
	"github.com/syncdesk/syncdesk/sync/fakes/hubspot"
)

// hubspotContact makes a contact in the fake as somebody working in
// HubSpot would, and returns its id.
func hubspotContact(t *testing.T, fake *hubspot.Fake, body string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/crm/v3/objects/contacts", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer pat-na1-test")
	req.Header.Set("Content-Type", "application/json")
	fake.ServeHTTP(rec, req)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	objs := fake.Objects("contacts")
	return objs[len(objs)-1].ID
}

// HubSpot keeps contacts' email unique and refuses a create with a taken
// one with a 409 naming the contact that holds it — the same answer as to
// our own key taken. A contact of somebody else's with the record's email
// is not adopted: the link fails in words, and the contact is left as it
// was. A contact carrying our key (a create of ours made it) still is.
func TestHubSpotConflictAdoptsOnlyAContactCarryingOurKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := clock.NewFake(epoch)
		fake := hubspotFake(clk, 10*time.Second, hubspot.Limit{Max: 1000, Window: 10 * time.Second})
		w := newPresetWorld(t, db, "hubspot", hubspotYAML, fake, clk, faults.Options{})
		theirs := hubspotContact(t, fake, `{"properties":{"email":"person1@example.com","firstname":"Someone"}}`)
		ours := hubspotContact(t, fake, `{"properties":{"email":"person2@example.com","syncdesk_key":"contact_2"}}`)
		w.sendAll("contact", 2, contact)

		l := w.link("contact", "1")
		require.Equal(t, models.StatusFailed, l.Status, "somebody else's contact is not ours to adopt")
		require.Empty(t, l.ExternalID)
		require.Contains(t, l.LastError, "HubSpot already has contact "+theirs)
		require.Contains(t, l.LastError, "it is not one of ours")
		require.Equal(t, 1, fake.CountByProperty("contacts", "email", "person1@example.com"))
		require.Zero(t, fake.CountByProperty("contacts", "syncdesk_key", l.ExternalKey), "their contact did not get our key")
		require.Equal(t, 1, fake.CountByProperty("contacts", "firstname", "Someone"), "nor our fields")
		require.Equal(t, []string{"contact.create 409", "contact.lookup 404"}, w.calls(l.ID),
			"the lookup that told their contact from ours (none carries our key) is in the attempt log")

		l = w.link("contact", "2")
		require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
		require.Equal(t, ours, l.ExternalID, "the contact carrying our key is adopted")
		require.Equal(t, []string{"contact.create 409", "contact.lookup 200"}, w.calls(l.ID))
	})
}

// calls are a link's attempts as "operation status", oldest first.
func (w *presetWorld) calls(linkID int64) []string {
	w.t.Helper()
	var out []string
	for _, a := range w.attempts(linkID) {
		out = append(out, fmt.Sprintf("%s %d", a.Operation, a.HTTPCode))
	}
	return out
}
