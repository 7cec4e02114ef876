package web

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/reconcile"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// roundsServer serves syncdesk with the CRM's orders listable and
// reconciled, and the CRM's webhooks (the shipped crm effects) received.
func roundsServer(t *testing.T, db *gorm.DB) (*bundle, *reconcile.Reconciler) {
	t.Helper()
	b := setup(t, db)
	svc := b.cfg.Services["crm"]
	svc.Objects = maps.Clone(svc.Objects)
	o := svc.Objects["order"]
	o.List = "GET /deals?cursor={cursor}"
	svc.Objects["order"] = o
	svc.Webhook = &config.Webhook{Scheme: "standard", Secrets: []string{standardSecret}, Effects: config.EffectSet("crm")}
	b.cfg.Services = map[string]config.Service{"crm": svc}
	log := slog.New(slog.DiscardHandler)
	rec := reconcile.New(db, []reconcile.Service{{Name: "crm", Config: svc, Conn: connector.NewHTTP("crm", svc, redact.New(nil), nil)}},
		b.clock, log, reconcile.Options{WorkerID: "test"})
	t.Cleanup(rec.Close)
	rc, err := inbox.New(db, b.cfg.Services, b.clock, log, redact.New(nil))
	require.NoError(t, err)
	s, err := New(Deps{DB: db, Config: b.cfg, Clock: b.clock, Version: "test", Log: log, Outbox: b.eng, Inbox: rc, Reconciler: rec})
	require.NoError(t, err)
	b.srv = httptest.NewServer(s.Handler())
	t.Cleanup(b.srv.Close)
	return b, rec
}

var roundHeadRe = regexp.MustCompile(`(?s)<li class="round-head"[^>]*>(.*?)</li>`)

// roundHeads returns the link page's round headings, newest first, as read.
func roundHeads(t *testing.T, c *client, id int64) []string {
	t.Helper()
	r := c.get(fmt.Sprintf("/links/%d", id))
	require.Equal(t, http.StatusOK, r.status)
	var out []string
	for _, m := range roundHeadRe.FindAllStringSubmatch(r.body, -1) {
		out = append(out, pageText(m[1]))
	}
	return out
}

// Each round of a link's attempts says what began it, with spaces between
// the words: a person's Sync now, a webhook asking for our state back, the
// record's new content, a reconciliation re-creating a missing object.
func TestLinkRoundsSayWhatBeganThem(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, rec := roundsServer(t, db)
		ctx := context.Background()
		step := func() { b.clock.Advance(time.Minute) }
		b.seedOrders(1, 1)
		links, err := models.RecordLinks(db, "order", "1")
		require.NoError(t, err)
		id := links[0].ID
		ana := b.signedIn("ana@example.com", models.RoleOperator)

		step()
		r := ana.post(fmt.Sprintf("/links/%d", id), fmt.Sprintf("/links/%d/sync", id), nil)
		require.Less(t, r.status, 400, r.body)
		require.NoError(t, b.eng.Drain(ctx))

		step()
		l, err := models.LinkByID(db, id)
		require.NoError(t, err)
		body := fmt.Sprintf(`{"type":"deal.updated","timestamp":%q,"data":{"id":%q,"external_key":"site_order_1","title":"Changed at the CRM"}}`,
			b.clock.Now().Format(time.RFC3339), l.ExternalID)
		code, answer := post(t, b.srv.URL+"/hooks/crm", body, delivery{"standard", "msg_round3", "deal.updated", []byte(body)}.signedAt(b.clock.Now(), false))
		require.Equal(t, http.StatusOK, code, answer)
		require.NoError(t, b.eng.Drain(ctx))

		step()
		_, err = b.eng.Upsert(ctx, "order", "1", []byte(`{"title":"Order 1, second edition"}`))
		require.NoError(t, err)
		require.NoError(t, b.eng.Drain(ctx))

		step()
		b.deleteRemote(1)
		run, err := rec.Run(ctx, "crm", reconcile.RunOptions{TriggeredBy: "test"})
		require.NoError(t, err)
		require.Equal(t, models.RunCompleted, run.Status, run.Error)
		step()
		require.NoError(t, b.eng.Drain(ctx))

		heads := roundHeads(t, ana, id)
		require.Len(t, heads, 5, "five rounds: %q", heads)
		want := []string{
			fmt.Sprintf("re-created by reconciliation run %d: the object was missing", run.ID),
			"the record changed",
			"pushed again after webhook deal.updated (msg_round3)",
			"Sync now by ana@example.com",
		}
		for i, w := range want {
			require.Contains(t, heads[i], " · "+w, "round %d", 5-i)
			require.NotContains(t, heads[i], "sent again after a success")
			require.Regexp(t, `^Round \d — began \d\d:\d\d:\d\d `, heads[i], "a space after began and after the time")
		}
	})
}
