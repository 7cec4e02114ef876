package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// refusedMarker is in every refused body: no page may show it.
const refusedMarker = "REFUSED-BODY-ON-A-PAGE-8c2e"

// shownText is what the element opened by data-testid=id reads as, up to
// the end tag given.
func shownText(t *testing.T, body, id, end string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `data-testid="`+id+`"`)
	require.True(t, ok, "no %s on the page", id)
	rest, _, _ = strings.Cut(rest, end)
	_, rest, _ = strings.Cut(rest, ">")
	return pageText(rest)
}

// postRefused posts a Stripe delivery signed at a time, forged (with the
// wrong secret) or not, through the real server, and returns its status.
func postRefused(t *testing.T, b *bundle, at time.Time, forged bool) int {
	t.Helper()
	body := `{"id":"evt_refused","type":"payment.succeeded","note":"` + refusedMarker + `"}`
	code, _ := post(t, b.srv.URL+"/hooks/stripe", body, delivery{scheme: "stripe", body: []byte(body)}.signedAt(at, forged))
	return code
}

// A forged delivery shows at once on the events page and the Services
// page, with its reason in words and the last good delivery beside it;
// its body shows nowhere, and after a day the warning is gone.
func TestPagesShowRefusedWebhookDeliveries(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, rc := pagesServer(t, db, nil)
		c := b.signedIn("vera@example.com", models.RoleViewer)

		r := c.get("/events")
		// A quiet service is one line on the events page.
		require.Equal(t, "none refused in the last 24 h", shownText(t, r.body, "refused-stripe", "</span>"))
		require.Equal(t, "no good delivery yet", shownText(t, r.body, "last-good-stripe", "</li>"))
		require.NotContains(t, r.body, `data-testid="webhook-health-crm"`, "crm takes no webhooks")

		good := `{"id":"evt_good","type":"customer.created"}`
		code, out := post(t, b.srv.URL+"/hooks/stripe", good, signers["stripe"](good, b.clock.Now()))
		require.Equal(t, http.StatusOK, code, out)
		b.clock.Advance(3 * time.Minute)
		require.Equal(t, http.StatusUnauthorized, postRefused(t, b, b.clock.Now(), true))
		b.clock.Advance(2 * time.Minute)

		// No Flush: the first refusal of a quiet spell is written before its answer.
		for _, page := range []string{"/events", "/services"} {
			r = c.get(page)
			require.Equal(t, http.StatusOK, r.status, r.body)
			refused := shownText(t, r.body, "refused-stripe", "</div>")
			require.Contains(t, refused, "1 refused in the last 24 h, last 2 min ago: signature missing or did not match (check the webhook secret).", page)
			require.Contains(t, refused, "Its check said: stripe webhook: bad webhook signature: no v1 signature matches", page)
			require.Contains(t, r.body, `class="alert alert-warn refusals" data-testid="refused-stripe"`, "%s: the warning look", page)
			require.Equal(t, "Last good delivery: 5 min ago", shownText(t, r.body, "last-good-stripe", "</p>"), page)
			require.NotContains(t, r.body, refusedMarker, page)
			require.NotContains(t, r.body, stripeSecret, page)
		}
		require.NotContains(t, shownText(t, r.body, "service-crm", "</section>"), "Webhooks", "a service without webhooks has no such line")

		// Two stale deliveries: three refused, the last for its timestamp.
		for range 2 {
			require.Equal(t, http.StatusUnauthorized, postRefused(t, b, b.clock.Now().Add(-time.Hour), false))
		}
		require.NoError(t, rc.Flush(context.Background()))
		r = c.get("/events?service=stripe")
		require.Contains(t, shownText(t, r.body, "refused-stripe", "</div>"),
			"3 refused in the last 24 h, last just now: timestamp too old (check the clock or a delayed retry).")

		b.clock.Advance(26 * time.Hour)
		c = b.signedIn("next-day@example.com", models.RoleViewer) // yesterday's session is gone
		for _, page := range []string{"/events", "/services"} {
			r = c.get(page)
			require.Contains(t, strings.ToLower(shownText(t, r.body, "refused-stripe", "</")), "none refused in the last 24 h", page)
			require.NotContains(t, r.body, "alert-warn refusals", page)
		}
		r = c.get("/events")
		require.Regexp(t, `^last good delivery \S`, shownText(t, r.body, "last-good-stripe", "</li>"), "a word apart from its time")
	})
}
