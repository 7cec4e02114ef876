package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/redact"
)

const hubspotSecret = "hubspot-client-secret-test"

// hubspotYAML is a HubSpot service from the preset, as README shows it.
const hubspotYAML = `
services:
  hubspot:
    preset: hubspot
    headers: {Authorization: "Bearer test-token"}
    webhook: {secrets: [` + hubspotSecret + `]}
    objects:
      contact: {}
`

// hubspotWorld serves syncdesk with the hubspot preset's webhook, on a
// receiver clock that stands still at hookNow, and ten contacts linked to
// HubSpot objects 5100…5109, last changed two hours before.
type hubspotWorld struct {
	t   *testing.T
	db  *gorm.DB
	srv *httptest.Server
	rc  *inbox.Receiver
}

func newHubSpotWorld(t *testing.T, db *gorm.DB) *hubspotWorld {
	p := filepath.Join(t.TempDir(), "syncdesk.yaml")
	require.NoError(t, os.WriteFile(p, []byte(hubspotYAML), 0o600))
	cfg, err := config.Load(p, config.Overrides{})
	require.NoError(t, err)
	clk := clock.NewFake(hookNow)
	rc, err := inbox.New(db, cfg.Services, clk, slog.New(slog.DiscardHandler), redact.New(nil))
	require.NoError(t, err)
	s, err := New(Deps{DB: db, Config: cfg, Clock: clk, Log: slog.New(slog.DiscardHandler), Inbox: rc})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	before := hookNow.Add(-2 * time.Hour)
	for i := range 10 {
		payload, hash, err := models.CanonicalPayload([]byte(fmt.Sprintf(`{"email":"c%d@example.com","first_name":"First","last_name":"Last"}`, i)))
		require.NoError(t, err)
		id := strconv.Itoa(i)
		require.NoError(t, db.Create(&models.Record{LocalType: "contact", LocalID: id, Payload: payload, ContentHash: hash,
			CreatedAt: before, UpdatedAt: before}).Error)
		require.NoError(t, db.Create(&models.Link{LocalType: "contact", LocalID: id, ExternalService: "hubspot",
			ExternalKey: "contact_" + id, ExternalID: strconv.Itoa(5100 + i), Status: models.StatusSuccess,
			NextAttemptAt: before, PushedHash: hash, CreatedAt: before, UpdatedAt: before}).Error)
	}
	return &hubspotWorld{t: t, db: db, srv: srv, rc: rc}
}

// hubspotEvent is one event as HubSpot's Webhooks API documents its
// payload (https://developers.hubspot.com/docs/api/webhooks, "Webhook
// payloads"): the contact 5100 + id%10 got the first name "Name-<id>",
// an hour before hookNow plus id milliseconds.
func hubspotEvent(id int) map[string]any {
	return map[string]any{
		"eventId": id, "subscriptionId": 77, "portalId": 62515, "appId": 1160452, "attemptNumber": 0,
		"occurredAt": hookNow.Add(-time.Hour).UnixMilli() + int64(id), "subscriptionType": "contact.propertyChange",
		"objectId": 5100 + id%10, "propertyName": "firstname", "propertyValue": fmt.Sprintf("Name-%d", id),
		"changeSource": "CRM_UI", "sourceId": "userId:1234",
	}
}

func hubspotBatch(ids ...int) []byte {
	events := make([]map[string]any, len(ids))
	for i, id := range ids {
		events[i] = hubspotEvent(id)
	}
	body, _ := json.Marshal(events)
	return body
}

// hubspotSignature signs as HubSpot's v3 does ("Validating requests",
// https://developers.hubspot.com/docs/apps/developer-platform/build-apps/authentication/request-validation):
// base64 of HMAC-SHA256, keyed with the app's client secret, over method,
// URI, body and the timestamp in milliseconds.
func hubspotSignature(method, uri string, body []byte, at time.Time) http.Header {
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	sig := base64.StdEncoding.EncodeToString(hmacSHA256([]byte(hubspotSecret), method+uri+string(body)+ms))
	return http.Header{"X-Hubspot-Signature-V3": {sig}, "X-Hubspot-Request-Timestamp": {ms}, "Content-Type": {"application/json"}}
}

// post delivers body to /hooks/hubspot signed for signedURI at a time.
func (w *hubspotWorld) post(body []byte, signedURI string, at time.Time) (int, string) {
	req, err := http.NewRequest(http.MethodPost, w.srv.URL+"/hooks/hubspot", strings.NewReader(string(body)))
	require.NoError(w.t, err)
	req.Header = hubspotSignature(http.MethodPost, signedURI, body, at)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(w.t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

func (w *hubspotWorld) deliver(body []byte) (int, string) {
	return w.post(body, w.srv.URL+"/hooks/hubspot", hookNow)
}

func (w *hubspotWorld) firstName(id int) string {
	rec, err := models.RecordByKey(w.db, "contact", strconv.Itoa(id))
	require.NoError(w.t, err)
	var p map[string]any
	require.NoError(w.t, json.Unmarshal([]byte(rec.Payload), &p))
	return fmt.Sprint(p["first_name"])
}

type batchAnswer struct {
	Events []inbox.Result `json:"events"`
}

func decodeBatch(t *testing.T, out string) batchAnswer {
	var a batchAnswer
	require.NoError(t, json.Unmarshal([]byte(out), &a), out)
	return a
}

// HubSpot sends up to 100 events per request. A batch of 50, with ten
// events sent twice inside it, and the same batch again, and one that
// overlaps it: each event is applied once, and the records end where the
// latest change of each contact says.
func TestHubSpotBatchesApplyEachEventOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newHubSpotWorld(t, db)
		ids := make([]int, 50)
		for i := range ids {
			ids[i] = 1000 + i%40 // 1000…1039, and 1000…1009 once more
		}
		code, out := w.deliver(hubspotBatch(ids...))
		require.Equal(t, http.StatusOK, code, out)
		a := decodeBatch(t, out)
		require.Len(t, a.Events, 50, "one result per event")
		dups := 0
		for _, r := range a.Events {
			if r.Duplicate {
				dups++
			}
		}
		require.Equal(t, 10, dups, "the repeats inside the batch are duplicates")
		require.EqualValues(t, 40, countEvents(t, db))
		for i := range 10 {
			require.Equal(t, fmt.Sprintf("Name-%d", 1030+i), w.firstName(i), "contact %d takes its latest change", i)
		}
		ev, err := models.EventByID(db, "hubspot", "77-1003")
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, ev.Outcome, ev.Error)
		require.Equal(t, 1, ev.Duplicates)
		require.Contains(t, ev.Payload, `"eventId":1003`, "each event stores its own JSON")
		require.NotContains(t, ev.Payload, `"eventId":1004`)

		// HubSpot retries the whole request: nothing applies twice.
		code, out = w.deliver(hubspotBatch(ids...))
		require.Equal(t, http.StatusOK, code, out)
		for _, r := range decodeBatch(t, out).Events {
			require.True(t, r.Duplicate, r.EventID)
		}
		require.EqualValues(t, 40, countEvents(t, db))

		// A later batch sharing ten events with the first.
		later := make([]int, 30)
		for i := range later {
			later[i] = 1030 + i
		}
		code, out = w.deliver(hubspotBatch(later...))
		require.Equal(t, http.StatusOK, code, out)
		require.EqualValues(t, 60, countEvents(t, db))
		for i := range 10 {
			require.Equal(t, fmt.Sprintf("Name-%d", 1050+i), w.firstName(i))
		}

		// An older change arriving late is old news, and our own value
		// coming back changes nothing.
		code, out = w.deliver(hubspotBatch(990))
		require.Equal(t, http.StatusOK, code, out)
		require.Equal(t, models.EventIgnored, decodeBatch(t, out).Events[0].Outcome)
		require.Contains(t, decodeBatch(t, out).Events[0].Note, "older news")
		require.Equal(t, "Name-1050", w.firstName(0))
		echo := hubspotEvent(2000)
		echo["propertyValue"] = "Name-1050"
		echo["objectId"] = 5100
		body, _ := json.Marshal([]any{echo})
		code, out = w.deliver(body)
		require.Equal(t, http.StatusOK, code, out)
		require.Equal(t, models.EventIgnored, decodeBatch(t, out).Events[0].Outcome, "an echo of what we hold")
		l, err := models.LinkByExternal(db, "hubspot", "5100", "")
		require.NoError(t, err)
		rec, err := models.RecordByKey(db, "contact", "0")
		require.NoError(t, err)
		require.Equal(t, models.StatusSuccess, l.Status, "HubSpot holds what it told us: nothing to push back")
		require.Equal(t, rec.ContentHash, l.PushedHash)
	})
}

// A tampered byte, a URI that is not the one signed, or a timestamp six
// minutes old: 401, and nothing recorded.
func TestHubSpotRefusesWhatItDidNotSign(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newHubSpotWorld(t, db)
		body := hubspotBatch(1, 2, 3)
		uri := w.srv.URL + "/hooks/hubspot"
		tampered := []byte(strings.Replace(string(body), "Name-2", "Name-X", 1))
		for name, send := range map[string]func() (int, string){
			"a tampered byte": func() (int, string) {
				req, _ := http.NewRequest(http.MethodPost, uri, strings.NewReader(string(tampered)))
				req.Header = hubspotSignature(http.MethodPost, uri, body, hookNow)
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				out, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(out)
			},
			"another URI":      func() (int, string) { return w.post(body, uri+"?portal=1", hookNow) },
			"six minutes old":  func() (int, string) { return w.post(body, uri, hookNow.Add(-6*time.Minute)) },
			"signed for https": func() (int, string) { return w.post(body, strings.Replace(uri, "http://", "https://", 1), hookNow) },
		} {
			code, out := send()
			require.Equal(t, http.StatusUnauthorized, code, "%s: %s", name, out)
		}
		require.Zero(t, countEvents(t, db), "a refused delivery records nothing")
		require.Equal(t, "First", w.firstName(1))

		// The refused count shows it, without the bodies.
		require.NoError(t, w.rc.Flush(context.Background()))
		refused, err := models.RefusalsSince(db, hookNow.Add(-24*time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 4, refused["hubspot"].N)
		var rows []models.WebhookRefusal
		require.NoError(t, db.Find(&rows).Error)
		for _, r := range rows {
			require.NotContains(t, r.LastDetail, "Name-", "no body is stored")
		}
	})
}

// A configured effect whose path finds nothing in an event: the event is
// stored as failed with the reason, and answered 2xx (HubSpot retrying it
// would not help), the other events of the batch applied.
func TestAnEventThePathsFindNothingInIsStoredAsUnprocessable(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newHubSpotWorld(t, db)
		orphan := hubspotEvent(7)
		delete(orphan, "objectId")
		body, _ := json.Marshal([]any{orphan, hubspotEvent(8)})
		code, out := w.deliver(body)
		require.Equal(t, http.StatusOK, code, out)
		ev, err := models.EventByID(db, "hubspot", "77-7")
		require.NoError(t, err)
		require.Equal(t, models.EventFailed, ev.Outcome)
		require.Contains(t, ev.Error, "the id path .objectId finds nothing in the event")
		require.Equal(t, "Name-8", w.firstName(8))

		// A batch whose event has no id at all cannot be deduplicated: 400.
		noID := hubspotEvent(9)
		delete(noID, "eventId")
		delete(noID, "subscriptionId")
		body, _ = json.Marshal([]any{noID})
		code, out = w.deliver(body)
		require.Equal(t, http.StatusBadRequest, code, out)
		require.Contains(t, out, "event 1 of 1: the event has no id")
	})
}

// 200 concurrent deliveries of one batch: every event is recorded once,
// every answer is 2xx.
func TestConcurrentDeliveriesOfOneHubSpotBatch(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newHubSpotWorld(t, db)
		ids := make([]int, 50)
		for i := range ids {
			ids[i] = 3000 + i
		}
		body := hubspotBatch(ids...)
		var wg sync.WaitGroup
		codes := make([]int, 200)
		outs := make([]string, 200)
		for i := range codes {
			wg.Go(func() { codes[i], outs[i] = w.deliver(body) })
		}
		wg.Wait()
		applied := 0
		for i, code := range codes {
			require.Equal(t, http.StatusOK, code, "delivery %d: %s", i, outs[i])
			for _, r := range decodeBatch(t, outs[i]).Events {
				if !r.Duplicate {
					applied++
				}
			}
		}
		require.Equal(t, 50, applied, "each event is new in exactly one delivery")
		require.EqualValues(t, 50, countEvents(t, db))
		require.NoError(t, w.rc.Flush(context.Background())) // re-sends answered from a read are counted in memory
		var dups int64
		require.NoError(t, db.Model(&models.ProcessedEvent{}).Select("COALESCE(SUM(duplicates), 0)").Scan(&dups).Error)
		require.EqualValues(t, 199*50, dups)
		for i := range 10 {
			require.Equal(t, fmt.Sprintf("Name-%d", 3040+i), w.firstName(i))
		}
	})
}
