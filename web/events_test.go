package web

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/schedule"
)

// pagesServer serves syncdesk like setup does, plus a "stripe" service that
// takes webhooks and the scheduler sched (nil for none), with the events and
// schedules routes in place.
func pagesServer(t *testing.T, db *gorm.DB, sched *schedule.Scheduler) (*bundle, *inbox.Receiver) {
	t.Helper()
	b := setup(t, db)
	b.cfg.Services = maps.Clone(b.cfg.Services)
	b.cfg.Services["stripe"] = config.Service{Webhook: &config.Webhook{Scheme: "stripe", Secrets: []string{stripeSecret}}}
	log := slog.New(slog.DiscardHandler)
	rc, err := inbox.New(db, b.cfg.Services, b.clock, log, redact.New(nil))
	require.NoError(t, err)
	s, err := New(Deps{DB: db, Config: b.cfg, Clock: b.clock, Version: "test", Log: log, Outbox: b.eng, Inbox: rc, Scheduler: sched})
	require.NoError(t, err)
	require.NoError(t, addEventAndScheduleRoutes(s))
	b.srv = httptest.NewServer(s.Handler())
	t.Cleanup(b.srv.Close)
	return b, rc
}

// addEventAndScheduleRoutes registers this feature's routes as routes.go
// does, unless routes.go already has them.
func addEventAndScheduleRoutes(s *Server) error {
	csrf := s.sessionCSRF
	have := map[string]bool{}
	for _, r := range s.echo.Routes() {
		have[r.Method+" "+r.Path] = true
	}
	add := func(method, path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
		if !have[method+" "+path] {
			s.echo.Add(method, path, h, append([]echo.MiddlewareFunc{s.requireUser, csrf, noStore}, mw...)...)
		}
	}
	add(http.MethodGet, "/events", s.listEvents)
	add(http.MethodGet, "/events/:service/:id", s.showEvent)
	add(http.MethodPost, "/events/:service/:id/replay", s.replayEvent, s.requireRole(models.RoleOperator))
	add(http.MethodGet, "/schedules", s.listSchedules, s.requireRole(models.RoleAdmin))
	add(http.MethodPost, "/schedules/:name/run", s.runSchedule, s.requireRole(models.RoleAdmin))
	return nil
}

// seedEvent stores a processed event as the inbox would have.
func seedEvent(t *testing.T, db *gorm.DB, provider, id, typ, outcome string, at time.Time) {
	t.Helper()
	ok, err := models.RecordEvent(db, models.ProcessedEvent{Provider: provider, EventID: id, EventType: typ,
		ReceivedAt: at, Outcome: outcome, Error: "note of " + id, Payload: `{"id":"` + id + `"}`})
	require.NoError(t, err)
	require.True(t, ok)
}

var (
	eventLinkRe = regexp.MustCompile(`href="/events/([^/"]+)/([^"]+)" data-testid="event-link"`)
	olderRe     = regexp.MustCompile(`href="([^"]+)" class="btn" data-testid="older"`)
)

// listed returns the "service/id" of each listed event and the next page's URL.
func listed(t *testing.T, c *client, path string) ([]string, string) {
	t.Helper()
	r := c.get(path)
	require.Equal(t, http.StatusOK, r.status, "GET %s: %s", path, r.body)
	var out []string
	for _, m := range eventLinkRe.FindAllStringSubmatch(r.body, -1) {
		id, err := url.PathUnescape(html.UnescapeString(m[2]))
		require.NoError(t, err)
		out = append(out, m[1]+"/"+id)
	}
	next := ""
	if m := olderRe.FindStringSubmatch(r.body); m != nil {
		next = html.UnescapeString(m[1])
	}
	return out, next
}

// 130 events, many received in the same instant, paged 50 at a time: every
// event once, newest first, ties in one stable order; filters narrow it and
// stay in the "Older" links.
func TestEventsListFiltersAndPages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := pagesServer(t, db, nil)
		c := b.signedIn("vera@example.com", models.RoleViewer)

		r := c.get("/events")
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.body, `data-testid="empty-events"`)
		require.Contains(t, r.body, "No webhooks received yet")

		base := b.clock.Now().Add(-time.Hour)
		type ev struct {
			key string
			at  time.Time
		}
		var all []ev
		for i := range 130 {
			provider, outcome, typ := "stripe", models.EventApplied, "payment.succeeded"
			if i%3 == 0 {
				provider = "crm"
			}
			if i%10 == 0 {
				outcome, typ = models.EventFailed, "payment.refunded"
			}
			at := base.Add(time.Duration(i/4) * time.Second) // four events per instant
			id := fmt.Sprintf("evt_%03d", i)
			seedEvent(t, db, provider, id, typ, outcome, at)
			all = append(all, ev{provider + "/" + id, at})
		}
		sort.Slice(all, func(i, j int) bool {
			if !all[i].at.Equal(all[j].at) {
				return all[i].at.After(all[j].at)
			}
			return all[i].key > all[j].key
		})
		var want []string
		for _, e := range all {
			want = append(want, e.key)
		}

		var got []string
		pages := 0
		for next := "/events"; next != ""; pages++ {
			var page []string
			page, next = listed(t, c, next)
			got = append(got, page...)
		}
		require.Equal(t, 3, pages)
		require.Equal(t, want, got, "every event once, newest first")

		page, next := listed(t, c, "/events?service=crm&outcome=failed")
		require.Empty(t, next)
		require.Len(t, page, 5) // i = 0, 30, 60, 90, 120
		for _, k := range page {
			require.True(t, strings.HasPrefix(k, "crm/"), k)
		}
		page, next = listed(t, c, "/events?type=payment.refunded")
		require.Len(t, page, 13)
		require.Empty(t, next)
		page, next = listed(t, c, "/events?service=stripe")
		require.Len(t, page, 50)
		require.Contains(t, next, "service=stripe", "the next page keeps the filter")
		older, _ := listed(t, c, next)
		require.Len(t, older, 86-50)
		require.NotContains(t, older, page[49])

		r = c.get("/events?type=nope")
		require.Contains(t, r.body, "No events match these filters")
		require.Equal(t, http.StatusBadRequest, c.get("/events?outcome=exploded").status)
		require.Equal(t, http.StatusBadRequest, c.get("/events?before=%21%21").status)
	})
}

// A real signed webhook with a secret in it: the detail page shows the
// payload masked and pretty-printed, never the secret.
func TestEventDetailShowsTheRedactedPayload(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, rc := pagesServer(t, db, nil)
		body := `{"id":"evt_secret","type":"customer.updated","data":{"object":{"id":"cus_1","password":"hunter2-very-secret"}}}`
		code, out := post(t, b.srv.URL+"/hooks/stripe", body, signers["stripe"](body, b.clock.Now()))
		require.Equal(t, http.StatusOK, code, out)
		code, _ = post(t, b.srv.URL+"/hooks/stripe", body, signers["stripe"](body, b.clock.Now()))
		require.Equal(t, http.StatusOK, code)
		require.NoError(t, rc.Flush(context.Background())) // a re-send is counted in memory, written within 2 s

		c := b.signedIn("vera@example.com", models.RoleViewer)
		r := c.get("/events/stripe/evt_secret")
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.NotContains(t, r.body, "hunter2")
		require.Contains(t, r.body, "[redacted]")
		require.Contains(t, r.body, "\n  &#34;data&#34;: {", "pretty-printed")
		require.Contains(t, r.body, "Ignored")
		require.Contains(t, r.body, "Delivered once more")
		require.Equal(t, http.StatusNotFound, c.get("/events/stripe/evt_nope").status)
	})
}

// An id with a slash and a space still has a working detail page.
func TestEventIDsWithAnyCharacter(t *testing.T) {
	t.Parallel()
	b, _ := pagesServer(t, dbtest.SQLite(t), nil)
	seedEvent(t, b.db, "stripe", "a/b c%", "x", models.EventIgnored, b.clock.Now())
	c := b.signedIn("vera@example.com", models.RoleViewer)
	page, _ := listed(t, c, "/events")
	require.Equal(t, []string{"stripe/a/b c%"}, page)
	r := c.get(eventURL("stripe", "a/b c%"))
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Contains(t, r.body, "a/b c%")
}

func TestReplayAsOperatorAndRefusedToAViewer(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, rc := pagesServer(t, db, nil)
		var runs atomic.Int32
		rc.Handle("stripe", "payment.succeeded", func(context.Context, *gorm.DB, inbox.Event, time.Time) (string, error) {
			runs.Add(1)
			return "payment pay_1 marked paid", nil
		})
		seedEvent(t, db, "stripe", "evt_1", "payment.succeeded", models.EventFailed, b.clock.Now().Add(-time.Hour))
		const page, replay = "/events/stripe/evt_1", "/events/stripe/evt_1/replay"

		viewer := b.signedIn("vera@example.com", models.RoleViewer)
		r := viewer.get(page)
		require.NotContains(t, r.body, `data-testid="replay"`, "a viewer sees no Replay button")
		require.Contains(t, r.body, "needs the operator role")
		r = viewer.post(page, replay, nil)
		require.Equal(t, http.StatusForbidden, r.status)
		require.Equal(t, int64(1), b.auditCount("access.denied", models.OutcomeDenied))
		require.Zero(t, runs.Load())

		op := b.signedIn("olga@example.com", models.RoleOperator)
		require.Contains(t, op.get(page).body, `data-testid="replay"`)
		r = op.post(page, replay, nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Equal(t, page+"?done=event-replayed", r.header.Get("Location"))
		require.Equal(t, int32(1), runs.Load())
		require.Equal(t, int64(1), b.auditCount("event.replay", models.OutcomeSuccess))

		r = op.get(r.header.Get("Location"))
		require.Contains(t, r.body, `data-testid="flash"`)
		require.Contains(t, r.body, "The event was replayed")
		require.Contains(t, r.body, "payment pay_1 marked paid")
		require.Contains(t, r.body, "Applied")

		r = op.post(page, "/events/stripe/evt_nope/replay", nil)
		require.Equal(t, http.StatusNotFound, r.status)
		require.Equal(t, int64(1), b.auditCount("event.replay", models.OutcomeFailure))
	})
}

// An effect that errors is rolled back; the operator reads why on the page.
func TestReplayThatFailsSaysSo(t *testing.T) {
	t.Parallel()
	b, rc := pagesServer(t, dbtest.SQLite(t), nil)
	rc.Handle("stripe", "payment.succeeded", func(context.Context, *gorm.DB, inbox.Event, time.Time) (string, error) {
		return "", fmt.Errorf("database is locked")
	})
	seedEvent(t, b.db, "stripe", "evt_1", "payment.succeeded", models.EventApplied, b.clock.Now())
	op := b.signedIn("olga@example.com", models.RoleOperator)
	r := op.post("/events/stripe/evt_1", "/events/stripe/evt_1/replay", nil)
	require.Equal(t, http.StatusInternalServerError, r.status)
	require.Contains(t, r.body, `data-testid="replay-error"`)
	require.Contains(t, r.body, "rolled back")
	require.Equal(t, int64(1), b.auditCount("event.replay", models.OutcomeFailure))
	ev, err := models.EventByID(b.db, "stripe", "evt_1")
	require.NoError(t, err)
	require.Equal(t, "note of evt_1", ev.Error, "nothing changed")
}

// Replaying, through the API, an event whose stored payload is not JSON is a
// 422 with the reason, as on the event's page, not a 500.
func TestAPIReplayOfAnUnreadableEventIs422(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := pagesServer(t, db, nil)
		seedEvent(t, db, "stripe", "evt_bad", "payment.succeeded", models.EventApplied, b.clock.Now())
		require.NoError(t, db.Model(&models.ProcessedEvent{}).Where("event_id = ?", "evt_bad").Update("payload", "not json").Error)
		token, _, err := models.CreateAPIToken(db, "shop", "test", b.clock.Now())
		require.NoError(t, err)
		r := b.client().do(http.MethodPost, "/api/v1/events/stripe/evt_bad/replay", nil, http.Header{"Authorization": {"Bearer " + token}})
		require.Equal(t, http.StatusUnprocessableEntity, r.status, r.body)
		require.Contains(t, r.body, "cannot be read as an event")

		op := b.signedIn("olga@example.com", models.RoleOperator)
		r = op.post("/events/stripe/evt_bad", "/events/stripe/evt_bad/replay", nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, "the page answers the same")
	})
}

// "Hide ignored" leaves out the events we had nothing to do for, and stays
// in the URL and the "Older" link; the type filter offers the types seen.
func TestEventsHideIgnoredAndTypeChoices(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := pagesServer(t, db, nil)
		now := b.clock.Now()
		for i := range 60 {
			seedEvent(t, db, "stripe", fmt.Sprintf("evt_i%02d", i), "payment.updated", models.EventIgnored, now.Add(-time.Duration(i)*time.Minute))
		}
		for i := range 55 {
			seedEvent(t, db, "stripe", fmt.Sprintf("evt_a%02d", i), "payment.succeeded", models.EventApplied, now.Add(-time.Duration(i)*time.Second))
		}
		seedEvent(t, db, "crm", "evt_f", "deal.deleted", models.EventFailed, now.Add(-2*time.Hour))
		c := b.signedIn("vic@example.com", models.RoleViewer)

		page, next := listed(t, c, "/events?hide_ignored=1")
		require.Len(t, page, 50)
		require.Contains(t, next, "hide_ignored=1", "the next page keeps hiding them")
		older, _ := listed(t, c, next)
		require.Len(t, older, 6)
		for _, k := range append(page, older...) {
			require.NotContains(t, k, "evt_i", "an ignored event listed")
		}

		r := c.get("/events?type=payment.updated")
		require.Regexp(t, `<option value="">All types</option>\s*<option value="deal.deleted">deal.deleted</option>`+
			`<option value="payment.succeeded">payment.succeeded</option><option value="payment.updated" selected>`, r.body)
		require.Contains(t, c.get("/events?hide_ignored=1").body, `value="1" checked`)
	})
}
