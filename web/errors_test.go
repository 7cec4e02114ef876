package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/reconcile"
	"github.com/syncdesk/syncdesk/sync/schedule"
)

// An error page says what happened in a card with a friendly title, keeps
// the section's menu item lit, and offers a way back; the JSON answers of
// /api/ and /hooks/ stay as they were.
func TestErrorPagesAreFriendly(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		viewer := b.signedIn("vic@example.com", models.RoleViewer)

		r := viewer.get("/links/999999")
		require.Equal(t, http.StatusNotFound, r.status)
		require.Contains(t, r.body, `<h1>Not found</h1>`)
		require.Contains(t, r.body, `class="card problem"`)
		require.Contains(t, r.body, `<a href="/links" aria-current="page">Links</a>`, "the Links menu item stays active")
		require.Contains(t, r.body, `href="/links" data-testid="go-back"`, "without a Referer, Go back leads to the section's list")
		require.Contains(t, r.body, `data-testid="to-overview"`)
		require.NotContains(t, r.body, "Not Found")

		r = viewer.do(http.MethodGet, "/records/order/nope", nil, http.Header{"Referer": {b.srv.URL + "/links?q=nope"}})
		require.Equal(t, http.StatusNotFound, r.status)
		require.Contains(t, r.body, `href="/links?q=nope" data-testid="go-back"`, "a Referer on this site is where Go back leads")

		r = viewer.do(http.MethodGet, "/records/order/nope", nil, http.Header{"Referer": {"https://elsewhere.example/links"}})
		require.Contains(t, r.body, `href="/links" data-testid="go-back"`, "a Referer on another site is not followed")

		r = viewer.post("/failed", "/failed/retry/confirm", nil)
		require.Equal(t, http.StatusForbidden, r.status)
		require.Contains(t, r.body, `<h1>Not allowed</h1>`)
		require.Contains(t, r.body, `<a href="/failed" aria-current="page">Failed</a>`)

		r = viewer.get("/links?status=bogus")
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.body, `<h1>That didn&#39;t work</h1>`)

		r = viewer.get("/no-such-page")
		require.Equal(t, http.StatusNotFound, r.status)
		require.NotContains(t, r.body, `aria-current="page"`, "a path in no section lights no menu item")
		require.NotContains(t, r.body, `data-testid="go-back"`, "the way back is the overview itself")

		r = b.client().do(http.MethodGet, "/api/v1/links", nil, nil)
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Contains(t, r.header.Get("Content-Type"), "application/json")
		r = b.client().do(http.MethodPost, "/hooks/nope", nil, nil)
		require.Contains(t, r.header.Get("Content-Type"), "application/json")
		require.Contains(t, r.body, `{"error":`)
	})
}

// Statuses are decided in one place: each sentinel of the engine has its
// status and words in problemFor, however deeply it is wrapped.
func TestProblemForTheEnginesErrors(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", err)) }
	for _, tc := range []struct {
		err    error
		status int
		words  string
	}{
		{inbox.ErrRejected, http.StatusUnauthorized, "rejected"},
		{inbox.ErrBadEvent, http.StatusBadRequest, "bad event"},
		{inbox.ErrUnreadableStored, http.StatusUnprocessableEntity, "cannot be read as an event"},
		{inbox.ErrNoWebhooks, http.StatusConflict, "no longer takes webhooks"},
		{models.ErrRunActive, http.StatusConflict, "already running"},
		{reconcile.ErrRunElsewhere, http.StatusConflict, "another instance"},
		{reconcile.ErrClosed, http.StatusServiceUnavailable, "stopping"},
		{schedule.ErrStopped, http.StatusServiceUnavailable, "scheduler did not take the task"},
		{models.ErrNotFound, http.StatusNotFound, "not found"},
		{context.Canceled, statusClientClosed, "cancelled before it finished"},
		{models.Invalid("Keep it short."), http.StatusBadRequest, "Keep it short."},
		{errors.New("boom"), http.StatusInternalServerError, "unexpected error"},
	} {
		p := problemFor(wrap(tc.err))
		require.Equal(t, tc.status, p.Status, "%v", tc.err)
		require.Contains(t, p.Message, tc.words, "%v", tc.err)
	}
}

// A cancelled query is the client's doing only when the client went away:
// one cancelled by anything else (a stop) is a failure, answered 500.
func TestACancelNotCausedByTheClientIsA500(t *testing.T) {
	b := setup(t, dbtest.SQLite(t))
	for _, tc := range []struct {
		clientGone bool
		want       int
	}{{true, statusClientClosed}, {false, http.StatusInternalServerError}} {
		ctx, cancel := context.WithCancel(context.Background())
		if tc.clientGone {
			cancel()
		}
		req := httptest.NewRequest(http.MethodGet, "/api/v1/links", nil).WithContext(ctx)
		rec := httptest.NewRecorder()
		b.web.handleError(fmt.Errorf("list links: %w", context.Canceled), b.web.echo.NewContext(req, rec))
		cancel()
		require.Equal(t, tc.want, rec.Code, "client gone: %v", tc.clientGone)
	}
}
