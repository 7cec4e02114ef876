package web

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/inbox"
)

// The document is served to anyone, as JSON, cacheable, and is a valid
// OpenAPI 3.1 document.
func TestOpenAPIDocumentIsServedAndValid(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	r := b.client().get("/api/openapi.json")
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Contains(t, r.header.Get("Content-Type"), "application/json")
	require.Equal(t, "public, max-age=3600", r.header.Get("Cache-Control"))
	etag := r.header.Get("ETag")
	require.NotEmpty(t, etag)

	doc, err := openapi3.NewLoader().LoadFromData([]byte(r.body))
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.True(t, doc.IsOpenAPI31OrLater())
	require.Equal(t, "http", doc.Components.SecuritySchemes["apiToken"].Value.Type)
	require.Equal(t, "bearer", doc.Components.SecuritySchemes["apiToken"].Value.Scheme)

	again := b.client().do(http.MethodGet, "/api/openapi.json", nil, http.Header{"If-None-Match": {etag}})
	require.Equal(t, http.StatusNotModified, again.status)
	require.Empty(t, again.body)
}

// A status code left unquoted in web/openapi.yaml is a number, and JSON
// keys are strings: the start stops, saying so, rather than serve a broken
// document.
func TestOpenAPIUnquotedStatusStopsTheStart(t *testing.T) {
	t.Parallel()
	_, err := yamlToJSON([]byte("paths:\n  /x:\n    get:\n      responses:\n        200: {description: ok}\n"))
	require.ErrorContains(t, err, "quote every status code")
	out, err := yamlToJSON([]byte("responses:\n  \"200\": {description: ok}\n"))
	require.NoError(t, err)
	require.JSONEq(t, `{"responses":{"200":{"description":"ok"}}}`, string(out))
}

var echoParam = regexp.MustCompile(`:([^/]+)`)

// Every route under /api/ is in the document, with its method, and the
// document has nothing the router lacks: a route added without its
// description fails here.
func TestOpenAPIDescribesEveryAPIRoute(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	spec, err := loadOpenAPISpec()
	require.NoError(t, err)
	var routed, documented []string
	for _, r := range b.web.echo.Routes() {
		if strings.HasPrefix(r.Path, "/api/") && r.Method != echo.RouteNotFound {
			routed = append(routed, r.Method+" "+echoParam.ReplaceAllString(r.Path, "{$1}"))
		}
	}
	for path, item := range spec.doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	slices.Sort(routed)
	slices.Sort(documented)
	for _, r := range routed {
		require.Contains(t, documented, r, "the route %s is not in web/openapi.yaml", r)
	}
	for _, d := range documented {
		require.Contains(t, routed, d, "web/openapi.yaml describes %s, which no route serves", d)
	}
}

// notDeliberately are the documented answers no test can cause on purpose
// here: an unexpected failure, and an unreachable database, which
// TestAnUnreachablePostgresIsAnswered503WithRetryAfterAndTheReason causes
// through the same checked client.
var notDeliberately = []string{"500", "503"}

// Each documented answer of each operation is caused once, through the
// checked client, so each is seen to match what syncdesk sends.
func TestOpenAPIEveryDocumentedAnswerIsSeen(t *testing.T) {
	t.Parallel()
	b, rc := pagesServer(t, dbtest.SQLite(t), nil)
	rc.Handle("stripe", "payment.succeeded", func(context.Context, *gorm.DB, inbox.Event, time.Time) (string, error) {
		return "payment marked paid", nil
	})
	a := b.api()
	anon := b.client()

	// getOpenAPI: 200, 304.
	etag := anon.get("/api/openapi.json").header.Get("ETag")
	anon.do(http.MethodGet, "/api/openapi.json", nil, http.Header{"If-None-Match": {etag}})

	// listLinks: 200, 400, 401.
	a.do("GET", "/api/v1/links", "")
	a.do("GET", "/api/v1/links?status=lost", "")
	anon.get("/api/v1/links")

	// putRecord: 200, 400 (a bad id), 401, 413, 415.
	code, out := a.do("PUT", "/api/v1/records/order/1", `{"title":"Order 1"}`)
	require.Equal(t, http.StatusOK, code, out)
	require.Equal(t, http.StatusBadRequest, a.send("PUT", "/api/v1/records/order/a%20b", `{"title":"x"}`).status)
	anon.do(http.MethodPut, "/api/v1/records/order/1", nil, nil)
	big := `{"x":"` + strings.Repeat("a", models.MaxPayload) + `"}`
	require.Equal(t, http.StatusRequestEntityTooLarge, a.send("PUT", "/api/v1/records/order/1", big).status)
	require.Equal(t, http.StatusUnsupportedMediaType, a.sendAs("text/plain", "PUT", "/api/v1/records/order/1", `{"title":"x"}`).status)

	// postRecords: 200 (JSON and NDJSON), 400, 401, 413, 415.
	code, batch := a.postBatch("application/json", `[{"type":"order","id":"2","payload":{"title":"Order 2"}},7]`)
	require.Equal(t, http.StatusOK, code, batch.Error)
	require.Equal(t, 1, batch.Refused, "a record that is not an object is refused on its own")
	code, _ = a.postBatch("application/x-ndjson", "{\"type\":\"order\",\"id\":\"3\",\"payload\":{}}\n")
	require.Equal(t, http.StatusOK, code)
	code, _ = a.postBatch("application/json", `[{"type":`)
	require.Equal(t, http.StatusBadRequest, code)
	anon.do(http.MethodPost, "/api/v1/records", nil, nil)
	code, _ = a.postBatch("application/json", "["+strings.Repeat(`{},`, 1000)+"{}]")
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	code, _ = a.postBatch("text/csv", "type,id\norder,4\n")
	require.Equal(t, http.StatusUnsupportedMediaType, code)

	// getRecord: 200, 400, 401, 404.
	a.do("GET", "/api/v1/records/order/1", "")
	require.Equal(t, http.StatusBadRequest, a.send("GET", "/api/v1/records/order/a%20b", "").status)
	anon.get("/api/v1/records/order/1")
	a.do("GET", "/api/v1/records/order/999", "")

	// deleteRecord: 200, 400, 401, 404.
	code, out = a.do("DELETE", "/api/v1/records/order/3", "")
	require.Equal(t, http.StatusOK, code, out)
	require.Equal(t, http.StatusBadRequest, a.send("DELETE", "/api/v1/records/order/a%20b", "").status)
	anon.do(http.MethodDelete, "/api/v1/records/order/3", nil, nil)
	require.Equal(t, http.StatusNotFound, a.send("DELETE", "/api/v1/records/order/999", "").status)

	// syncLink: 202, 400, 401, 404, 409 (the first is still being sent).
	links, err := models.RecordLinks(b.db, "order", "1")
	require.NoError(t, err)
	sync := "/api/v1/links/" + itoa(links[0].ID) + "/sync"
	require.Equal(t, http.StatusAccepted, a.send("POST", sync, "").status)
	require.Equal(t, http.StatusConflict, a.send("POST", sync, "").status)
	require.Equal(t, http.StatusBadRequest, a.send("POST", "/api/v1/links/0/sync", "").status)
	anon.do(http.MethodPost, sync, nil, nil)
	require.Equal(t, http.StatusNotFound, a.send("POST", "/api/v1/links/999/sync", "").status)

	// replayEvent: 200, 400, 401, 404, 409 (a service without webhooks), 422.
	seedEvent(t, b.db, "stripe", "evt_1", "payment.succeeded", models.EventApplied, b.clock.Now())
	seedEvent(t, b.db, "crm", "evt_2", "deal.updated", models.EventApplied, b.clock.Now())
	seedEvent(t, b.db, "stripe", "evt_bad", "payment.succeeded", models.EventApplied, b.clock.Now())
	require.NoError(t, b.db.Model(&models.ProcessedEvent{}).Where("event_id = ?", "evt_bad").Update("payload", "not json").Error)
	require.Equal(t, http.StatusOK, a.send("POST", "/api/v1/events/stripe/evt_1/replay", "").status)
	require.Equal(t, http.StatusBadRequest, a.send("POST", "/api/v1/events/stripe/a%FFb/replay", "").status)
	anon.do(http.MethodPost, "/api/v1/events/stripe/evt_1/replay", nil, nil)
	require.Equal(t, http.StatusNotFound, a.send("POST", "/api/v1/events/stripe/evt_404/replay", "").status)
	require.Equal(t, http.StatusConflict, a.send("POST", "/api/v1/events/crm/evt_2/replay", "").status)
	require.Equal(t, http.StatusUnprocessableEntity, a.send("POST", "/api/v1/events/stripe/evt_bad/replay", "").status)

	spec, err := loadOpenAPISpec()
	require.NoError(t, err)
	var missing []string
	for _, item := range spec.doc.Paths.Map() {
		for _, op := range item.Operations() {
			for status := range op.Responses.Map() {
				_, seen := seenResponses.Load(fmt.Sprintf("%s|%s|%s", t.Name(), op.OperationID, status))
				if !seen && !slices.Contains(notDeliberately, status) {
					missing = append(missing, op.OperationID+" "+status)
				}
			}
		}
	}
	require.Empty(t, missing, "documented answers no call here caused (or that did not match)")
}

// The check itself catches a mismatch: an undocumented field, a wrong
// type, an undocumented status, a path the document lacks answered 200,
// and a request the document refuses that syncdesk took.
func TestOpenAPICheckCatchesMismatches(t *testing.T) {
	t.Parallel()
	auth := http.Header{"Authorization": {"Bearer sdk_x"}}
	json := http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}}
	for _, tc := range []struct {
		name, method, path, reqBody string
		status                      int
		body, want                  string
	}{
		{"extra field", "GET", "/api/v1/links", "", 200, `{"items":[],"more":true}`, "more"},
		{"wrong type", "GET", "/api/v1/links", "", 200, `{"items":[{"id":"1"}]}`, "items"},
		{"undocumented status", "GET", "/api/v1/links", "", 418, `{"error":"no"}`, "status is not supported"},
		{"error shape", "GET", "/api/v1/records/order/1", "", 404, `{"message":"no"}`, "error"},
		{"unknown path answered", "GET", "/api/v1/nope", "", 200, `{}`, "not in the document"},
		{"refused request taken", "PUT", "/api/v1/records/order/1", `[1]`, 200, `{}`, "refuses the request"},
	} {
		req, err := http.NewRequest(tc.method, "http://127.0.0.1"+tc.path, strings.NewReader(tc.reqBody))
		require.NoError(t, err)
		req.Header = auth.Clone()
		req.Header.Set("Content-Type", "application/json")
		_, err = checkOpenAPI(req, []byte(tc.reqBody), tc.status, json, []byte(tc.body))
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	req, err := http.NewRequest("GET", "http://127.0.0.1/api/v1/links", nil)
	require.NoError(t, err)
	req.Header = auth
	op, err := checkOpenAPI(req, nil, 200, json, []byte(`{"items":[]}`))
	require.NoError(t, err, "a true answer passes")
	require.Equal(t, "listLinks", op)
}
