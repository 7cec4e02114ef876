package inbox

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

const hubspotSecret = "hubspot-client-secret-test"

// hubspot is a receiver for the hubspot preset's webhook, as README shows
// it, with contact/1 linked to HubSpot's contact 5101 and written at created.
type hubspot struct {
	t   *testing.T
	db  *gorm.DB
	clk *clock.Fake
	rc  *Receiver
}

func newHubSpot(t *testing.T, db *gorm.DB, created time.Time) *hubspot {
	p := filepath.Join(t.TempDir(), "syncdesk.yaml")
	require.NoError(t, os.WriteFile(p, []byte(`
services:
  hubspot:
    preset: hubspot
    headers: {Authorization: "Bearer test-token"}
    webhook: {secrets: [`+hubspotSecret+`]}
    objects:
      contact: {}
`), 0o600))
	cfg, err := config.Load(p, config.Overrides{})
	require.NoError(t, err)
	clk := clock.NewFake(created.Add(2 * time.Hour))
	rc, err := New(db, cfg.Services, clk, slog.New(slog.DiscardHandler), redact.New(nil))
	require.NoError(t, err)
	payload, hash, err := models.CanonicalPayload([]byte(`{"email":"ada@example.com","first_name":"A.","last_name":"King"}`))
	require.NoError(t, err)
	require.NoError(t, db.Create(&models.Record{LocalType: "contact", LocalID: "1", Payload: payload, ContentHash: hash,
		CreatedAt: created, UpdatedAt: created}).Error)
	require.NoError(t, db.Create(&models.Link{LocalType: "contact", LocalID: "1", ExternalService: "hubspot",
		ExternalKey: "contact_1", ExternalID: "5101", Status: models.StatusSuccess, NextAttemptAt: created,
		PushedHash: hash, CreatedAt: created, UpdatedAt: created}).Error)
	return &hubspot{t: t, db: db, clk: clk, rc: rc}
}

// propertyChange is a contact.propertyChange of contact 5101 as HubSpot's Webhooks
// API documents it (https://developers.hubspot.com/docs/api/webhooks,
// "Webhook payloads"), with its id and when it happened.
type propertyChange struct {
	id            int
	at            time.Time
	property, val string
}

// deliver posts the changes as one list, signed with HubSpot's v3
// signature, and returns the result of each event by its id.
func (h *hubspot) deliver(changes ...propertyChange) map[string]Result {
	events := make([]map[string]any, len(changes))
	for i, c := range changes {
		events[i] = map[string]any{"eventId": c.id, "subscriptionId": 77, "portalId": 62515, "appId": 1160452,
			"occurredAt": c.at.UnixMilli(), "subscriptionType": "contact.propertyChange", "objectId": 5101,
			"propertyName": c.property, "propertyValue": c.val, "changeSource": "CRM_UI"}
	}
	body, err := json.Marshal(events)
	require.NoError(h.t, err)
	const uri = "http://127.0.0.1/hooks/hubspot"
	ms := strconv.FormatInt(h.clk.Now().UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(hubspotSecret))
	mac.Write([]byte(http.MethodPost + uri + string(body) + ms))
	a, err := h.rc.Receive(context.Background(), "hubspot", Delivery{Method: http.MethodPost, URL: uri, Body: body,
		Header: http.Header{"X-Hubspot-Signature-V3": {base64.StdEncoding.EncodeToString(mac.Sum(nil))}, "X-Hubspot-Request-Timestamp": {ms}}})
	require.NoError(h.t, err)
	out := map[string]Result{}
	for _, r := range a.Events {
		out[r.EventID] = r
	}
	require.Len(h.t, out, len(changes))
	return out
}

func (h *hubspot) contact() map[string]any {
	rec, err := models.RecordByKey(h.db, "contact", "1")
	require.NoError(h.t, err)
	m, err := decodeObject(rec.Payload)
	require.NoError(h.t, err)
	return m
}

// HubSpot sends one property per event, and a list's events are applied in
// the order of their ids as text: 77-10 before 77-9. The last name changed
// a millisecond before the first name; applied after it, it is not older
// news, since the last name had not changed since. A change of the first
// name older than its last one still is.
func TestAHubSpotListLosesNoPropertyBehindALaterChangeOfAnother(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		created := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
		h := newHubSpot(t, db, created)
		at := created.Add(time.Hour)
		res := h.deliver(propertyChange{9, at.Add(9 * time.Millisecond), "lastname", "Lovelace"},
			propertyChange{10, at.Add(10 * time.Millisecond), "firstname", "Ada"})
		for _, id := range []string{"77-9", "77-10"} {
			require.Equal(t, models.EventApplied, res[id].Outcome, "event %s: %s", id, res[id].Note)
		}
		require.Equal(t, "Lovelace", h.contact()["last_name"], "the last name changed before the first name, and was lost")
		require.Equal(t, "Ada", h.contact()["first_name"])

		res = h.deliver(propertyChange{8, at.Add(8 * time.Millisecond), "firstname", "Augusta"})
		require.Equal(t, models.EventIgnored, res["77-8"].Outcome, res["77-8"].Note)
		require.Equal(t, "the change happened at 2026-12-07T10:00:00.008Z, before the last change of first_name (2026-12-07T10:00:00.01Z) "+
			"in contact/1: older news, nothing to do", res["77-8"].Note)
		require.Equal(t, "Ada", h.contact()["first_name"], "an older change of the same field is older news")

		l, err := models.LinkByExternal(db, "hubspot", "5101", "")
		require.NoError(t, err)
		rec, err := models.RecordByKey(db, "contact", "1")
		require.NoError(t, err)
		require.Equal(t, models.StatusSuccess, l.Status, "HubSpot holds both changes: nothing to push back")
		require.Equal(t, rec.ContentHash, l.PushedHash)
	})
}

// A local write that changed the amount makes a provider's change of the
// amount made before it older news, and no other field's: the currency
// changed at the provider before that write, and is taken.
func TestALocalWriteOfOneFieldLeavesAnOlderChangeOfAnotherToApply(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := shop(t, db, map[string]config.Effect{
			"payment.changed": {UpdateFields: config.Body{Expr: `.data.object.fields`}},
		})
		e.payment("1") // {"amount":1000,"currency":"EUR","status":"pending"} at the clock's time
		created := e.clock.Now()
		e.clock.Advance(2 * time.Minute)
		v, h, err := models.CanonicalPayload([]byte(`{"amount":1500,"currency":"EUR","status":"pending"}`))
		require.NoError(t, err)
		changed, err := models.UpsertRecord(db, "order", "1", v, h, e.clock.Now())
		require.NoError(t, err)
		require.True(t, changed)

		change := func(evt, fields string) Result {
			res, err := e.deliver("payments", shopEvent(evt, "payment.changed", `{"id":"pay_1","fields":`+fields+`}`,
				created.Add(time.Minute).Unix()))
			require.NoError(t, err)
			return res
		}
		res := change("evt_1", `{"currency":"USD"}`)
		require.Equal(t, models.EventApplied, res.Outcome, "the currency did not change locally: %s", res.Note)
		res = change("evt_2", `{"amount":"900"}`)
		require.Equal(t, models.EventIgnored, res.Outcome, "the amount changed locally after: %s", res.Note)
		require.Contains(t, res.Note, "older news")

		// One event changing both: the currency's part is our own value
		// coming back, the amount's older news, and the status is taken.
		res = change("evt_3", `{"amount":"900","currency":"USD","status":"paid"}`)
		require.Equal(t, models.EventApplied, res.Outcome, res.Note)
		require.Equal(t, "order/1 took status from payments; older news for amount (2026-11-29T12:02:00Z), "+
			"changed after this change (2026-11-29T12:01:00Z)", res.Note)
		rec, err := models.RecordByKey(db, "order", "1")
		require.NoError(t, err)
		require.JSONEq(t, `{"amount":1500,"currency":"USD","status":"paid"}`, rec.Payload)
	})
}

// A record written before field times were kept (migration 0033) knows no
// field's time: each counts as changed when the record last did, as the
// whole record did before, and a change older than that is older news.
// Its first change keeps that time for the fields it did not change.
func TestARecordWithoutFieldTimesCountsEachFieldAsChangedWithIt(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := shop(t, db, map[string]config.Effect{
			"payment.changed": {UpdateFields: config.Body{Expr: `.data.object.fields`}},
		})
		e.payment("1")
		written := e.clock.Now()
		require.NoError(t, db.Exec("UPDATE records SET created_at = ?", written.Add(-time.Hour)).Error)
		change := func(evt string, at time.Time, fields string) Result {
			res, err := e.deliver("payments", shopEvent(evt, "payment.changed", `{"id":"pay_1","fields":`+fields+`}`, at.Unix()))
			require.NoError(t, err)
			return res
		}
		res := change("evt_1", written.Add(-time.Minute), `{"currency":"USD"}`)
		require.Equal(t, models.EventIgnored, res.Outcome, res.Note)
		require.Equal(t, fmt.Sprintf("the change happened at 2026-11-29T11:59:00Z, before the last change of currency (%s) in order/1: "+
			"older news, nothing to do", written.Format(time.RFC3339)), res.Note)

		e.clock.Advance(time.Hour)
		res = change("evt_2", written.Add(time.Minute), `{"status":"paid"}`)
		require.Equal(t, models.EventApplied, res.Outcome, res.Note)
		res = change("evt_3", written.Add(-time.Minute), `{"currency":"USD"}`)
		require.Equal(t, models.EventIgnored, res.Outcome, "the currency still counts as changed at %s: %s", written, res.Note)
		res = change("evt_4", written.Add(30*time.Second), `{"currency":"USD"}`)
		require.Equal(t, models.EventApplied, res.Outcome, "the status changed at 12:01, and the currency at 12:00 at the latest: %s", res.Note)
	})
}
