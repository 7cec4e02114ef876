package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/inbox"
)

// BenchmarkWebhookVsNaive sets syncdesk's webhook path beside the least a
// server can do and still be correct about durability: in each db= sub-run,
// BenchmarkWebhookDeliveries' load (the same deliveries, clients and
// signatures) is sent to syncdesk, then again to a naive Echo server on its
// own tables in the same database, through the same connection pool (so
// SQLite's synchronous=FULL and Postgres's defaults hold for both). It
// reports deliveries/s of each and ratio = syncdesk's ÷ the naive one's;
// ns/op is per syncdesk delivery. On Linux it also reports the CPU time the
// whole machine spent per delivery on each (machineBusy): the work, where
// the rates vary with the machine's load.
func BenchmarkWebhookVsNaive(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, open func(testing.TB) *gorm.DB) {
		b.StopTimer()
		load := newBenchLoad(b.N)
		db := open(b)
		seedPayments(b, db, load.events())
		url, rc := benchServer(b, db, stripeBenchServices())
		syncdesk, busy := timeDeliveries(b, url+"/hooks/"+benchService, load)
		load.check(b, db, rc)
		naive, naiveBusy := timeDeliveries(b, naiveServer(b, db)+"/hooks/"+benchService, load)
		checkNaive(b, db, load)

		rate, naiveRate := float64(b.N)/syncdesk.Seconds(), float64(b.N)/naive.Seconds()
		b.ReportMetric(float64(syncdesk.Nanoseconds())/float64(b.N), "ns/op")
		b.ReportMetric(rate, "deliveries/s")
		b.ReportMetric(naiveRate, "naive_deliveries/s")
		b.ReportMetric(rate/naiveRate, "ratio")
		if busy > 0 {
			b.ReportMetric(float64(busy.Microseconds())/float64(b.N), "machine-µs/delivery")
			b.ReportMetric(float64(naiveBusy.Microseconds())/float64(b.N), "naive-machine-µs/delivery")
		}
	})
}

// naiveSchema is the naive server's tables: the events seen, by id, and
// the payments they mark, by key. Both dialects take it as it is.
var naiveSchema = []string{
	`CREATE TABLE naive_events (provider TEXT NOT NULL, event_id TEXT NOT NULL, received_at TIMESTAMP NOT NULL, PRIMARY KEY (provider, event_id))`,
	`CREATE TABLE naive_payments (external_key TEXT PRIMARY KEY, payment_id TEXT NOT NULL, status TEXT NOT NULL, payload TEXT NOT NULL, updated_at TIMESTAMP NOT NULL)`,
}

// naiveHooks is the naive server: check the Stripe signature's HMAC, then
// in one transaction insert-or-ignore the event's id and upsert the payment
// it names, on every delivery (the upsert writes the same row again on a
// re-send), and answer once that has committed.
type naiveHooks struct{ db *gorm.DB }

// naiveServer creates the naive server's tables in db, serves it with Echo
// and returns its URL.
func naiveServer(b *testing.B, db *gorm.DB) string {
	b.Helper()
	for _, stmt := range naiveSchema {
		if err := db.Exec(stmt).Error; err != nil {
			b.Fatalf("naive server's tables: %v", err)
		}
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.POST("/hooks/:service", naiveHooks{db}.receive)
	srv := httptest.NewServer(e)
	b.Cleanup(srv.Close)
	return srv.URL
}

// naiveEvent is what the naive server reads of a Stripe event.
type naiveEvent struct {
	ID   string `json:"id"`
	Data struct {
		Object struct {
			ID     string `json:"id"`
			Key    string `json:"external_key"`
			Status string `json:"status"`
		} `json:"object"`
	} `json:"data"`
}

func (h naiveHooks) receive(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, 1<<20))
	if err != nil {
		return err
	}
	if !naiveSigned(c.Request().Header.Get("Stripe-Signature"), body) {
		return c.NoContent(http.StatusUnauthorized)
	}
	var ev naiveEvent
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" || ev.Data.Object.Key == "" {
		return c.NoContent(http.StatusBadRequest)
	}
	now := time.Now().UTC()
	var inserted bool
	err = h.db.WithContext(c.Request().Context()).Transaction(func(tx *gorm.DB) error {
		res := tx.Exec(`INSERT INTO naive_events (provider, event_id, received_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
			c.Param("service"), ev.ID, now)
		if res.Error != nil {
			return res.Error
		}
		inserted = res.RowsAffected == 1
		o := ev.Data.Object
		return tx.Exec(`INSERT INTO naive_payments (external_key, payment_id, status, payload, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (external_key) DO UPDATE SET payment_id = excluded.payment_id, status = excluded.status,
			payload = excluded.payload, updated_at = excluded.updated_at`, o.Key, o.ID, o.Status, string(body), now).Error
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, inbox.Result{EventID: ev.ID, Duplicate: !inserted, Outcome: models.EventApplied})
}

// naiveSigned checks a Stripe-Signature header ("t=…,v1=…") against the
// body, the HMAC alone: no tolerance window, no second secret.
func naiveSigned(header string, body []byte) bool {
	var ts, sig string
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	got, err := hex.DecodeString(sig)
	if err != nil || ts == "" {
		return false
	}
	mac := hmac.New(sha256.New, []byte(stripeSecret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// checkNaive proves the naive server did the work: one row per distinct
// event, and one succeeded payment per event.
func checkNaive(b *testing.B, db *gorm.DB, load benchLoad) {
	b.Helper()
	var events, payments int64
	if err := db.Raw(`SELECT COUNT(*) FROM naive_events WHERE provider = ?`, benchService).Scan(&events).Error; err != nil {
		b.Fatalf("count the naive server's events: %v", err)
	}
	if err := db.Raw(`SELECT COUNT(*) FROM naive_payments WHERE status = 'succeeded'`).Scan(&payments).Error; err != nil {
		b.Fatalf("count the naive server's payments: %v", err)
	}
	if want := int64(load.events()); events != want || payments != want {
		b.Fatalf("after %d deliveries the naive server holds %d events and %d succeeded payments; want %d of each",
			load.deliveries(), events, payments, want)
	}
}

// TestNaiveSigned keeps the naive server honest: it must refuse what
// syncdesk refuses for want of a valid HMAC, or it would be measured doing
// less than it claims.
func TestNaiveSigned(t *testing.T) {
	body := []byte(benchEvent(1))
	mac := hmac.New(sha256.New, []byte(stripeSecret))
	mac.Write([]byte("1764417600." + string(body)))
	good := "t=1764417600,v1=" + hex.EncodeToString(mac.Sum(nil))
	require.True(t, naiveSigned(good, body), "a signature made with the secret")
	for name, header := range map[string]string{
		"other body":      good,
		"other timestamp": strings.Replace(good, "t=1764417600", "t=1764417601", 1),
		"no signature":    "t=1764417600",
		"not hex":         "t=1764417600,v1=zz",
		"no timestamp":    strings.Replace(good, "t=1764417600,", "", 1),
		"empty header":    "",
	} {
		b := body
		if name == "other body" {
			b = []byte(benchEvent(2))
		}
		require.False(t, naiveSigned(header, b), name)
	}
}
