package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/fakes/faults"
	"github.com/syncdesk/syncdesk/sync/fakes/hubspot"
	"github.com/syncdesk/syncdesk/sync/fakes/salesforce"
)

// The providers' limits that a window's wait does not lift, through the
// presets: a link is held, not failed, and keeps its attempts.

// refusing answers status (the provider's own body, by answer) to the next
// n requests that are not for a token, then lets the fake answer.
type refusing struct {
	next   http.Handler
	n      atomic.Int32
	status int
	header http.Header
	answer func(w http.ResponseWriter, status int)
}

func (r *refusing) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/services/oauth2/token" || r.n.Add(-1) < 0 {
		r.next.ServeHTTP(w, req)
		return
	}
	for k, v := range r.header {
		w.Header()[k] = v
	}
	r.answer(w, r.status)
}

// Salesforce answers 403 REQUEST_LIMIT_EXCEEDED once the org's API requests
// for the last 24 hours are spent ("Status Codes and Error Responses",
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm).
// No link fails or uses up an attempt: each waits the preset's hour, with
// no lookup first (nothing was done), and goes through once requests are
// allowed again.
func TestSalesforceOrgOutOfAPIRequestsHoldsEveryLinkWithoutUsingItsAttempts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := clock.NewFake(epoch)
		fake := salesforceFake(t, clk)
		refuse := &refusing{next: fake, status: http.StatusForbidden, answer: salesforce.FaultAnswer}
		refuse.n.Store(1 << 20)
		w := newPresetWorld(t, db, "salesforce", salesforceYAML, refuse, clk, faults.Options{})
		w.patient()
		for i := 1; i <= 5; i++ {
			_, err := w.eng.Upsert(context.Background(), "account", fmt.Sprint(i), []byte(account(i)))
			require.NoError(t, err)
		}
		require.NoError(t, w.eng.Drain(context.Background()))
		for i := 1; i <= 5; i++ {
			l := w.link("account", fmt.Sprint(i))
			require.Equal(t, models.StatusRetry, l.Status, "a spent allowance is no failure of the link's: %s", l.LastError)
			require.Zero(t, l.Attempts, "the refusal uses up none of the link's attempts")
			require.False(t, l.NeedsLookup, "a 403 REQUEST_LIMIT_EXCEEDED did nothing")
			require.Equal(t, clk.Now().Add(time.Hour), l.NextAttemptAt.UTC(), "held for the preset's hour")
			require.Equal(t, 403, l.LastHTTPCode)
			require.Contains(t, l.LastError, "the org's API requests for the last 24 hours are used up")
			require.Contains(t, l.LastError, "REQUEST_LIMIT_EXCEEDED")
		}

		clk.Advance(59 * time.Minute)
		require.NoError(t, w.eng.Drain(context.Background()))
		require.Equal(t, models.StatusRetry, w.link("account", "1").Status, "not asked again before the hour")

		refuse.n.Store(0) // the rolling 24 hours free requests again
		clk.Advance(time.Minute)
		w.settle()
		for i := 1; i <= 5; i++ {
			l := w.link("account", fmt.Sprint(i))
			require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
			require.Len(t, w.attempts(l.ID), 2, "refused once, then sent")
			require.Equal(t, 1, fake.CountByField("Account", "Syncdesk_Key__c", l.ExternalKey))
		}
	})
}

// HubSpot's 423 Locked and 477 Migration in Progress did nothing and ask to
// come back ("Error handling",
// https://developers.hubspot.com/docs/api-reference/error-handling): the
// link is retried, not failed, and with no lookup first.
func TestHubSpotLockedAndMigratingAreRetriedNotFailed(t *testing.T) {
	for _, status := range []int{423, 477} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				clk := clock.NewFake(epoch)
				fake := hubspotFake(clk, 0, hubspot.Limit{Max: 1000, Window: 10 * time.Second})
				refuse := &refusing{next: fake, status: status, answer: hubspot.Answer,
					header: http.Header{"Retry-After": {"1"}}}
				refuse.n.Store(2)
				w := newPresetWorld(t, db, "hubspot", hubspotYAML, refuse, clk, faults.Options{})
				w.patient()
				_, err := w.eng.Upsert(context.Background(), "contact", "1", []byte(contact(1)))
				require.NoError(t, err)
				require.NoError(t, w.eng.Drain(context.Background()))
				l := w.link("contact", "1")
				require.Equal(t, models.StatusRetry, l.Status, "HTTP %d asks to come back: %s", status, l.LastError)
				require.False(t, l.NeedsLookup, "HTTP %d did nothing: no lookup needed", status)
				require.Equal(t, status, l.LastHTTPCode)

				w.settle()
				l = w.link("contact", "1")
				require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
				require.Len(t, w.attempts(l.ID), 3, "two refusals, then the create")
				require.Len(t, fake.Objects("contacts"), 1)
			})
		})
	}
}

// HubSpot's daily limit is reached: it answers 429 with policyName DAILY
// and no Retry-After until midnight in the account's time zone ("API usage
// guidelines",
// https://developers.hubspot.com/docs/developer-tooling/platform/usage-guidelines).
// The window's 10 s would have every link use up its attempts within a
// minute; instead each waits the preset's hour, asks again, and keeps its
// attempts, until the new day's allowance lets it through (the fake's day
// is UTC's, twelve hours after the test's noon).
func TestHubSpotDailyLimitHoldsLinksUntilTheAllowanceReturns(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := clock.NewFake(epoch)
		fake := hubspot.New(hubspot.Options{Now: clk.Now, Daily: 5, Limit: hubspot.Limit{Max: 1000, Window: 10 * time.Second},
			Properties: map[string][]hubspot.Property{"contacts": {{Name: "syncdesk_key", Unique: true}}}})
		w := newPresetWorld(t, db, "hubspot", hubspotYAML, fake, clk, faults.Options{})
		w.patient()
		for i := 1; i <= 10; i++ {
			_, err := w.eng.Upsert(context.Background(), "contact", fmt.Sprint(i), []byte(contact(i)))
			require.NoError(t, err)
		}
		require.NoError(t, w.eng.Drain(context.Background()))
		var held []models.Link
		require.NoError(t, db.Where("status = ?", models.StatusRetry).Find(&held).Error)
		require.Len(t, held, 5, "five went through before the day's allowance ran out")
		for _, l := range held {
			require.Zero(t, l.Attempts, "the daily limit uses up none of the link's attempts: %s", l.LastError)
			require.Equal(t, clk.Now().Add(time.Hour), l.NextAttemptAt.UTC(), "held an hour, not the 10 s window")
			require.Contains(t, l.LastError, "the account's daily API limit is reached")
		}

		for range 11 { // to 23:00, asking every hour
			clk.Advance(time.Hour)
			require.NoError(t, w.eng.Drain(context.Background()))
		}
		require.NoError(t, db.Where("status = ?", models.StatusRetry).Find(&held).Error)
		require.Len(t, held, 5)
		for _, l := range held {
			require.Zero(t, l.Attempts, "a dozen hourly refusals used none of the link's attempts")
			require.Len(t, w.attempts(l.ID), 12, "asked once an hour")
		}

		settle(t, db, w.eng, clk, time.Hour, 3)
		var links []models.Link
		require.NoError(t, db.Find(&links).Error)
		for _, l := range links {
			require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
		}
		require.Len(t, fake.Objects("contacts"), 10)
		require.False(t, clk.Now().Before(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)), "through with the next day's allowance")
	})
}

// patient gives the world's service a timeout that a loaded machine under
// -race does not reach, so that a slow answer's own retry cannot be taken
// for a refusal's.
func (w *presetWorld) patient() {
	cfg := w.svc.Config
	cfg.Timeout = 10 * time.Second
	w.svc.Config, w.svc.Conn = cfg, connector.NewHTTP(w.svc.Name, cfg, w.redact, nil)
	w.eng = New(w.db, []Service{w.svc}, w.clock, slog.New(slog.DiscardHandler), Options{Concurrency: 4})
	w.eng.SetRand(rand.New(rand.NewPCG(7, 8)))
}

func (w *presetWorld) attempts(linkID int64) []models.Attempt {
	w.t.Helper()
	as, err := models.LinkAttempts(w.db, linkID)
	require.NoError(w.t, err)
	return as
}
