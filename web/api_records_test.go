package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// api is a client of the JSON API with a bearer token.
type api struct {
	c    *client
	auth http.Header
}

func (b *bundle) api() *api {
	token, _, err := models.CreateAPIToken(b.db, "shop", "test", b.clock.Now())
	require.NoError(b.t, err)
	return &api{c: b.client(), auth: http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}}
}

func (a *api) do(method, path, body string) (int, map[string]any) {
	a.c.b.t.Helper()
	r := a.send(method, path, body)
	var out map[string]any
	require.NoError(a.c.b.t, json.Unmarshal([]byte(r.body), &out), "every API answer is JSON")
	return r.status, out
}

// sendAs is send with the body's Content-Type contentType, none for "".
func (a *api) sendAs(contentType, method, path, body string) response {
	a.c.b.t.Helper()
	saved := a.auth.Get("Content-Type")
	a.auth.Set("Content-Type", contentType)
	if contentType == "" {
		a.auth.Del("Content-Type")
	}
	defer a.auth.Set("Content-Type", saved)
	return a.send(method, path, body)
}

// A record's body is JSON, sent as such: another Content-Type (text/plain,
// curl's form default), none, or one that cannot be read is refused with a
// 415 in words and nothing is stored, by the single PUT as by the batch,
// as README and the API's description say.
func TestTheRecordsAPITakesOnlyJSONBodies(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	a := b.api()
	put, batch := `{"title":"Order 1"}`, `[{"type":"order","id":"1","payload":{"title":"Order 1"}}]`
	for _, tc := range []struct {
		contentType, method, path, body string
		code                            int
		error                           string
	}{
		{"text/plain", "PUT", "/api/v1/records/order/1", put, http.StatusUnsupportedMediaType,
			"a record is sent as application/json, not text/plain"},
		{"application/x-www-form-urlencoded", "PUT", "/api/v1/records/order/1", put, http.StatusUnsupportedMediaType,
			"a record is sent as application/json, not application/x-www-form-urlencoded"},
		{"application/x-ndjson", "PUT", "/api/v1/records/order/1", put, http.StatusUnsupportedMediaType,
			"a record is sent as application/json, not application/x-ndjson"},
		{"application/json; charset", "PUT", "/api/v1/records/order/1", put, http.StatusUnsupportedMediaType,
			`a record is sent as application/json; the Content-Type "application/json; charset" could not be read`},
		{"", "PUT", "/api/v1/records/order/1", put, http.StatusUnsupportedMediaType,
			"a record is sent as application/json; the request has no Content-Type"},
		{"", "POST", "/api/v1/records", batch, http.StatusUnsupportedMediaType,
			"a batch is sent as application/json (an array of records) or application/x-ndjson (one record per line); " +
				"the request has no Content-Type"},
		{"text/plain", "POST", "/api/v1/records", batch, http.StatusUnsupportedMediaType,
			"a batch is sent as application/json (an array of records) or application/x-ndjson (one record per line), not text/plain"},
		{"application/json; charset", "POST", "/api/v1/records", batch, http.StatusUnsupportedMediaType,
			"a batch is sent as application/json (an array of records) or application/x-ndjson (one record per line); " +
				`the Content-Type "application/json; charset" could not be read`},
	} {
		r := a.sendAs(tc.contentType, tc.method, tc.path, tc.body)
		require.Equal(t, tc.code, r.status, "%s %s as %s: %s", tc.method, tc.path, tc.contentType, r.body)
		require.JSONEq(t, `{"error":`+strconv.Quote(tc.error)+`}`, r.body, "%s as %s", tc.method, tc.contentType)
	}
	require.Zero(t, b.count(&models.Record{}), "nothing refused was stored")

	for _, contentType := range []string{"application/json; charset=utf-8", "Application/JSON"} {
		r := a.sendAs(contentType, "PUT", "/api/v1/records/order/1", put)
		require.Equal(t, http.StatusOK, r.status, "a PUT as %q: %s", contentType, r.body)
		r = a.sendAs(contentType, "POST", "/api/v1/records", batch)
		require.Equal(t, http.StatusOK, r.status, "a batch as %q: %s", contentType, r.body)
	}
}

func TestRecordsAPIUpsertIsIdempotent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		a := b.api()
		code, out := a.do("PUT", "/api/v1/records/order/12345", `{"title":"Order 12345","total":"10.00"}`)
		require.Equal(t, http.StatusOK, code, out)
		require.Equal(t, true, out["changed"])
		links := out["links"].([]any)
		require.Len(t, links, 1)
		link := links[0].(map[string]any)
		require.Equal(t, "crm", link["service"])
		require.Equal(t, "new", link["status"])
		require.Equal(t, "site_order_12345", link["external_key"])

		code, out = a.do("PUT", "/api/v1/records/order/12345", `{"total":"10.00", "title":"Order 12345"}`)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, false, out["changed"], "the same payload again changes nothing")

		require.NoError(t, b.eng.Drain(context.Background()))
		code, out = a.do("GET", "/api/v1/records/order/12345", "")
		require.Equal(t, http.StatusOK, code)
		link = out["links"].([]any)[0].(map[string]any)
		require.Equal(t, "success", link["status"])
		require.NotEmpty(t, link["external_id"])
		require.Equal(t, "Order 12345", out["payload"].(map[string]any)["title"])
		require.Equal(t, 1, b.crm.CountByKey("site_order_12345"))

		code, out = a.do("PUT", "/api/v1/records/order/12345", `{"title":"Order 12345","total":"12.00"}`)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, true, out["changed"])
		require.Equal(t, "new", out["links"].([]any)[0].(map[string]any)["status"], "a new payload queues a push")
	})
}

func TestRecordsAPIRefusesBadInputInWords(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	a := b.api()
	for _, tc := range []struct {
		method, path, body string
		code               int
		words              string
	}{
		{"PUT", "/api/v1/records/order/1", `not json`, 400, "must be a JSON object"},
		{"PUT", "/api/v1/records/order/1", `[1]`, 400, "must be a JSON object"},
		{"PUT", "/api/v1/records/order/1", `{"a":1} {"b":2}`, 400, "nothing after it"},
		{"PUT", "/api/v1/records/order/1", `{"a":1}}`, 400, "nothing after it"},
		{"PUT", "/api/v1/records/order/1", `{"a":1}]`, 400, "nothing after it"},
		{"PUT", "/api/v1/records/invoice/1", `{}`, 400, "no service is configured for records of type"},
		{"PUT", "/api/v1/records/order/1", `{"x":"` + strings.Repeat("a", models.MaxPayload) + `"}`, 413, "larger than"},
		{"GET", "/api/v1/records/order/404", "", 404, "Record order/404: not found"},
		{"POST", "/api/v1/links/abc/sync", "", 400, "positive number"},
		{"POST", "/api/v1/links/999/sync", "", 404, "Link 999: not found"},
	} {
		code, out := a.do(tc.method, tc.path, tc.body)
		require.Equal(t, tc.code, code, "%s %s %.40s", tc.method, tc.path, tc.body)
		require.Contains(t, out["error"], tc.words)
	}
	var n int64
	b.db.Model(&models.Record{}).Count(&n)
	require.Zero(t, n, "refused input wrote nothing")
}

// 50 concurrent "Sync now" calls for one link: one is queued, 49 are told it
// is already in progress, none fails, and the provider gets one send.
func TestSyncNowThroughTheAPIIsDebounced(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		a := b.api()
		a.do("PUT", "/api/v1/records/order/7", `{"title":"Order 7"}`)
		require.NoError(t, b.eng.Drain(context.Background()))
		l, err := models.RecordLinks(db, "order", "7")
		require.NoError(t, err)
		before := b.crm.Requests().Total

		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, out := a.do("POST", "/api/v1/links/"+itoa(l[0].ID)+"/sync", "")
				mu.Lock()
				defer mu.Unlock()
				codes[code]++
				switch code {
				case http.StatusConflict:
					assert.Contains(t, out["error"], "already in progress since")
					assert.Equal(t, "api:shop", out["by"])
				case http.StatusAccepted:
					assert.Equal(t, "new", out["link"].(map[string]any)["status"], "the link as queued")
				}
			}()
		}
		wg.Wait()
		require.Equal(t, map[int]int{http.StatusAccepted: 1, http.StatusConflict: 49}, codes)
		require.NoError(t, b.eng.Drain(context.Background()))
		require.Equal(t, before+1, b.crm.Requests().Total, "one send")
		require.EqualValues(t, 1, b.auditCount("link.sync", models.OutcomeSuccess))
		require.EqualValues(t, 49, b.auditCount("link.sync", models.OutcomeDenied), "each refused call is audited, as a click on the page is")
	})
}
