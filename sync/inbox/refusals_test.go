package inbox

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/inbox/verify"
)

// bodyMarker is in every refused body: it must turn up in no row.
const bodyMarker = "REFUSED-BODY-MARKER-5d1f9"

// forgedSign signs as Stripe does, but with a secret syncdesk does not have.
func forgedSign(body string, t time.Time) http.Header {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte("whsec_a_forger_guess"))
	mac.Write([]byte(ts + "." + body))
	return http.Header{"Stripe-Signature": {"t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))}}
}

// refusalRows reads the refusal counts of a service by reason.
func refusalRows(t *testing.T, db *gorm.DB, service string) map[string]models.WebhookRefusal {
	t.Helper()
	var rows []models.WebhookRefusal
	require.NoError(t, db.Where("service = ?", service).Find(&rows).Error)
	out := map[string]models.WebhookRefusal{}
	for _, r := range rows {
		prev := out[r.Reason]
		r.N += prev.N
		out[r.Reason] = r
	}
	return out
}

// dump is every row of every table, as text.
func dump(t *testing.T, db *gorm.DB) string {
	t.Helper()
	tables, err := db.Migrator().GetTables()
	require.NoError(t, err)
	require.Contains(t, tables, "webhook_refusals")
	var b strings.Builder
	for _, table := range tables {
		var rows []map[string]any
		require.NoError(t, db.Table(table).Find(&rows).Error)
		for _, r := range rows {
			for k, v := range r {
				fmt.Fprintf(&b, "%s.%s=%s\n", table, k, v)
			}
		}
	}
	return b.String()
}

// metricValue reads one series of syncdesk_webhooks_refused_total.
func metricValue(t *testing.T, reg *prometheus.Registry, service, reason string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "syncdesk_webhooks_refused_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["service"] == service && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// Forged, stale and unreadable deliveries are counted by reason, with the
// words the sender was answered, and their bodies are kept nowhere: not in
// a row, not in the log.
func TestRefusedDeliveriesAreCountedByReasonNotStored(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		var logged bytes.Buffer
		e.rc.log = slog.New(slog.NewTextHandler(&logged, nil))
		reg := prometheus.NewRegistry()
		require.NoError(t, e.rc.RegisterMetrics(reg))
		ctx := context.Background()
		now := e.clock.Now()
		body := func(id string) string {
			return fmt.Sprintf(`{"id":%q,"type":"payment.succeeded","card":%q}`, id, bodyMarker)
		}

		forged := forgedSign(body("evt_forged"), now)
		_, err := e.rc.Receive(ctx, "payments", Delivery{Header: forged, Body: []byte(body("evt_forged"))})
		require.ErrorIs(t, err, ErrRejected)
		_, err = e.rc.Receive(ctx, "payments", Delivery{Header: http.Header{}, Body: []byte(body("evt_unsigned"))})
		require.ErrorIs(t, err, ErrRejected)
		e.clock.Advance(time.Second)
		_, err = e.rc.Receive(ctx, "payments", Delivery{Header: stripeSign(body("evt_stale"), now.Add(-10*time.Minute)), Body: []byte(body("evt_stale"))})
		require.ErrorIs(t, err, ErrRejected)
		notJSON := "not json " + bodyMarker
		_, err = e.rc.Receive(ctx, "payments", Delivery{Header: stripeSign(notJSON, now), Body: []byte(notJSON)})
		require.ErrorIs(t, err, ErrBadEvent)
		nulID := `{"id":"evt\u0000` + bodyMarker + `","type":"x"}`
		_, err = e.rc.Receive(ctx, "payments", Delivery{Header: stripeSign(nulID, now), Body: []byte(nulID)})
		require.ErrorIs(t, err, ErrBadEvent)
		_, err = e.rc.Receive(ctx, "crm", Delivery{Header: forgedSign(body("evt_crm"), now), Body: []byte(body("evt_crm"))})
		require.ErrorIs(t, err, ErrRejected)
		require.NoError(t, e.rc.Flush(ctx))

		rows := refusalRows(t, db, "payments")
		require.Len(t, rows, 3)
		require.EqualValues(t, 2, rows[models.RefusedSignature].N)
		require.Equal(t, "stripe webhook: missing webhook signature: no Stripe-Signature header", rows[models.RefusedSignature].LastDetail,
			"the later of the two")
		require.EqualValues(t, 1, rows[models.RefusedTimestamp].N)
		require.Contains(t, rows[models.RefusedTimestamp].LastDetail, "webhook timestamp outside tolerance: signed 10m1s ago")
		require.EqualValues(t, 2, rows[models.RefusedShape].N)
		require.Equal(t, "the event id contains a NUL character", rows[models.RefusedShape].LastDetail)
		require.True(t, rows[models.RefusedShape].LastAt.Equal(now.Add(time.Second)))
		require.EqualValues(t, 1, refusalRows(t, db, "crm")[models.RefusedSignature].N, "counted per service")

		var events int64
		require.NoError(t, db.Model(&models.ProcessedEvent{}).Count(&events).Error)
		require.Zero(t, events)
		all := dump(t, db)
		require.Contains(t, all, "no Stripe-Signature header", "the dump reads the refusal rows")
		require.NotContains(t, all, bodyMarker, "a refused body is stored nowhere")
		require.NotContains(t, all, paySecret)
		require.NotContains(t, all, strings.TrimPrefix(forged.Get("Stripe-Signature"), "t="), "nor the signature sent")
		require.NotContains(t, logged.String(), bodyMarker)

		require.EqualValues(t, 2, metricValue(t, reg, "payments", models.RefusedSignature))
		require.EqualValues(t, 1, metricValue(t, reg, "payments", models.RefusedTimestamp))
		require.EqualValues(t, 2, metricValue(t, reg, "payments", models.RefusedShape))
		require.EqualValues(t, 1, metricValue(t, reg, "crm", models.RefusedSignature))

		// Should a cause ever quote a configured secret, the count masks it.
		e.rc.redact.AddSecrets(paySecret)
		_ = e.rc.refuse(ctx, "crm", ErrRejected, fmt.Errorf("%w: tried %s", verify.ErrBadSignature, paySecret))
		require.NoError(t, e.rc.Flush(ctx))
		require.Equal(t, "bad webhook signature: tried [redacted]", refusalRows(t, db, "crm")[models.RefusedSignature].LastDetail)

		// A good delivery is not a refusal.
		_, err = e.deliver("payments", paymentEvent("evt_good", "x.y", "1"))
		require.NoError(t, err)
		require.NoError(t, e.rc.Flush(ctx))
		require.EqualValues(t, 2, refusalRows(t, db, "payments")[models.RefusedSignature].N)
	})
}

// refusalWrites counts the statements that write webhook_refusals, and can
// make them fail.
type refusalWrites struct {
	n    atomic.Int64
	fail atomic.Bool
}

func countRefusalWrites(t *testing.T, db *gorm.DB) *refusalWrites {
	t.Helper()
	w := &refusalWrites{}
	require.NoError(t, db.Callback().Raw().Before("gorm:raw").Register("test:refusal_writes", func(tx *gorm.DB) {
		if !strings.Contains(tx.Statement.SQL.String(), "INSERT INTO webhook_refusals") {
			return
		}
		w.n.Add(1)
		if w.fail.Load() {
			_ = tx.AddError(errors.New("the disk is full"))
		}
	}))
	return w
}

func refusedTotal(t *testing.T, db *gorm.DB) int64 {
	t.Helper()
	var n int64
	for _, r := range refusalRows(t, db, "payments") {
		n += r.N
	}
	return n
}

// A thousand forged requests at once make a write for the first, then at
// most one a second; Close leaves the exact count, and refusals after a
// quiet spell land by themselves, the next second.
func TestAFloodOfForgedRequestsMakesFewWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		writes := countRefusalWrites(t, db)
		ctx := context.Background()
		body := `{"id":"evt_flood","type":"payment.succeeded"}`
		h := forgedSign(body, e.clock.Now())

		_, err := e.rc.Receive(ctx, "payments", Delivery{Header: h, Body: []byte(body)})
		require.ErrorIs(t, err, ErrRejected)
		require.EqualValues(t, 1, refusedTotal(t, db), "the first refusal of a quiet spell is written before it is answered")

		const senders, each = 20, 50
		start := time.Now()
		var wg sync.WaitGroup
		for range senders {
			wg.Go(func() {
				for range each {
					_, err := e.rc.Receive(ctx, "payments", Delivery{Header: h, Body: []byte(body)})
					if !errors.Is(err, ErrRejected) {
						t.Errorf("want a rejection, got %v", err)
					}
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		require.LessOrEqual(t, writes.n.Load(), int64(2+elapsed/time.Second),
			"1001 refusals in %s: the first write, then at most one a second", elapsed)
		require.NoError(t, e.rc.Flush(ctx))
		require.EqualValues(t, 1+senders*each, refusedTotal(t, db), "Flush writes what was still counted")
		flushed := writes.n.Load()

		// The write scheduled during the flood finds nothing left to add.
		time.Sleep(refusalWriteEvery + 200*time.Millisecond)
		require.EqualValues(t, 1+senders*each, refusedTotal(t, db))
		require.Equal(t, flushed, writes.n.Load())

		// Two more: the first at once, the second with the next second's write.
		for range 2 {
			_, err := e.rc.Receive(ctx, "payments", Delivery{Header: h, Body: []byte(body)})
			require.ErrorIs(t, err, ErrRejected)
		}
		require.EqualValues(t, 2+senders*each, refusedTotal(t, db))
		require.Eventually(t, func() bool { return refusedTotal(t, db) == 3+senders*each }, 5*time.Second, 20*time.Millisecond)
		require.Equal(t, flushed+2, writes.n.Load())

		// Counted but not yet written when the server stops: Close writes it.
		for range 3 {
			_, err := e.rc.Receive(ctx, "payments", Delivery{Header: h, Body: []byte(body)})
			require.ErrorIs(t, err, ErrRejected)
		}
		require.NoError(t, e.rc.Close(ctx))
		require.EqualValues(t, 6+senders*each, refusedTotal(t, db))
	})
}

// A write the database refuses loses nothing: its counts wait and land
// with the next one.
func TestRefusalCountsSurviveAFailedWrite(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		writes := countRefusalWrites(t, db)
		e.rc.log = slog.New(slog.DiscardHandler)
		ctx := context.Background()
		body := `{"id":"evt_x","type":"payment.succeeded"}`
		writes.fail.Store(true)
		for range 3 {
			_, err := e.rc.Receive(ctx, "payments", Delivery{Header: forgedSign(body, e.clock.Now()), Body: []byte(body)})
			require.ErrorIs(t, err, ErrRejected, "the answer does not depend on the count")
		}
		require.Error(t, e.rc.Flush(ctx))
		require.Zero(t, refusedTotal(t, db))
		writes.fail.Store(false)
		require.NoError(t, e.rc.Flush(ctx))
		require.EqualValues(t, 3, refusedTotal(t, db))
	})
}
