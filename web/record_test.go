package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// deliverDealUpdated hands the CRM's signed deal.updated about order n's
// deal to a receiver of the CRM's webhooks on the bundle's clock, as the
// demo CRM sends it.
func (b *bundle) deliverDealUpdated(n int, eventID string) {
	b.t.Helper()
	svc := b.cfg.Services["crm"]
	svc.Webhook = &config.Webhook{Scheme: "standard", Secrets: []string{standardSecret}, Effects: config.EffectSet("crm")}
	rc, err := inbox.New(b.db, map[string]config.Service{"crm": svc}, b.clock, slog.New(slog.DiscardHandler), redact.New(nil))
	require.NoError(b.t, err)
	deal := b.dealsOf(fmt.Sprintf("site_order_%d", n))[0]
	body := fmt.Sprintf(`{"type":"deal.updated","timestamp":"%s","data":{"id":"%s","external_key":"site_order_%d","title":"Order %d"}}`,
		b.clock.Now().Format(time.RFC3339), deal, n, n)
	d := delivery{scheme: "standard", id: eventID, body: []byte(body)}
	ans, err := rc.Receive(context.Background(), "crm", inbox.Delivery{Method: http.MethodPost, URL: "/hooks/crm",
		Header: d.signedAt(b.clock.Now(), false), Body: []byte(body)})
	require.NoError(b.t, err)
	require.Len(b.t, ans.Events, 1)
}

var timelineKinds = regexp.MustCompile(`data-testid="timeline-entry" data-kind="(\w+)"`)

// A record's page holds, in time order, its link's attempts, the webhook
// events about it (found by the link the inbox noted, not by reading
// payloads) and the audit entries on the link and on the record.
func TestRecordTimelineHoldsAttemptsWebhooksAndAuditInOrder(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := reconcileServer(t, db, 0)
		b.seedOrders(1, 2) // an attempt each
		b.clock.Advance(time.Minute)
		b.deliverDealUpdated(1, "msg_about_order_1")
		b.deliverDealUpdated(2, "msg_about_order_2")
		ev, err := models.EventByID(db, "crm", "msg_about_order_1")
		require.NoError(t, err)
		l := linkOf(t, db, "1")
		require.NotNil(t, ev.LinkID, "the inbox kept the link the effect found")
		require.Equal(t, l.ID, *ev.LinkID)
		b.clock.Advance(time.Minute)
		op := b.signedIn("ops@example.com", models.RoleOperator)
		r := op.post("/links/"+itoa(l.ID), fmt.Sprintf("/links/%d/sync", l.ID), nil)
		require.Less(t, r.status, 400, r.body)

		r = op.get("/records/order/1")
		require.Equal(t, http.StatusOK, r.status)
		links := between(t, r.body, `data-testid="links-table"`, "</table>")
		require.NotContains(t, links, ">Record</th>", "the record's own page does not name it on every row")
		require.Contains(t, links, fmt.Sprintf(`<a href="/links/%d">crm</a>`, l.ID), "the service leads to its link's page")
		var kinds []string
		for _, m := range timelineKinds.FindAllStringSubmatch(r.body, -1) {
			kinds = append(kinds, m[1])
		}
		require.Equal(t, []string{"attempt", "event", "audit"}, kinds[:3], "oldest first: %v", kinds)
		tl := between(t, r.body, `data-testid="record-timeline"`, "</ol>")
		require.Contains(t, tl, "deal.create: OK")
		require.Contains(t, tl, `href="/events/crm/msg_about_order_1"`)
		require.Contains(t, tl, "deal.updated: ignored")
		require.Contains(t, tl, "Sync now by ops@example.com")
		require.NotContains(t, tl, "msg_about_order_2", "another record's webhook is not on this one's page")
		require.Contains(t, r.body, `data-testid="check-provider"`, "an operator can check the provider")
		v := b.signedIn("vic@example.com", models.RoleViewer)
		require.NotContains(t, v.get("/records/order/1").body, `data-testid="check-provider"`)
	})
}

// "Check the provider now" looks the record's object up at the provider and
// shows a field that was changed there (the sandbox's drift endpoint),
// with both values, and changes nothing: not the link, not the record, no
// attempt. It is audited on the record, so the timeline shows it.
func TestCheckTheProviderNowShowsADifferenceMadeAtTheSandbox(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := reconcileServer(t, db, 0)
		b.seedOrders(1, 1)
		op := b.signedIn("ops@example.com", models.RoleOperator)
		r := op.post("/records/order/1", "/records/order/1/check", nil)
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Contains(t, between(t, r.body, `data-testid="check-crm"`, "</li>"), "It holds what the record says")

		res, err := http.Post(b.cfg.Services["crm"].BaseURL+"/_sandbox/drift", "application/json", strings.NewReader(`{"alter":1}`))
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		before := linkOf(t, db, "1")
		var attempts int64
		require.NoError(t, db.Model(&models.Attempt{}).Count(&attempts).Error)

		r = op.post("/records/order/1", "/records/order/1/check", nil)
		require.Equal(t, http.StatusOK, r.status, r.body)
		check := between(t, r.body, `data-testid="check-crm"`, "</li>")
		require.Contains(t, check, before.ExternalID)
		require.Contains(t, check, "the link points at it")
		require.Contains(t, check, "<strong>title</strong>")
		require.Contains(t, check, `<q data-testid="diff-here">Order 1</q>`)
		require.Contains(t, check, `<q data-testid="diff-there">edited in the provider</q>`)

		after := linkOf(t, db, "1")
		require.Equal(t, before, after, "the link is as it was")
		var n int64
		require.NoError(t, db.Model(&models.Attempt{}).Count(&n).Error)
		require.Equal(t, attempts, n, "no attempt: nothing was sent")
		rec, err := models.RecordByKey(db, "order", "1")
		require.NoError(t, err)
		require.Contains(t, rec.Payload, `"Order 1"`)
		require.EqualValues(t, 2, b.auditCount("record.check", models.OutcomeSuccess))
		require.Contains(t, between(t, op.get("/records/order/1").body, `data-testid="record-timeline"`, "</ol>"),
			"Checked a record at the providers by ops@example.com")

		v := b.signedIn("vic@example.com", models.RoleViewer)
		require.Equal(t, http.StatusForbidden, v.post("/records/order/1", "/records/order/1/check", nil).status)
	})
}
