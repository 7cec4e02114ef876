package outbox

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/alerts"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/notify"
	"github.com/syncdesk/syncdesk/sync/notify/notifytest"
)

// benchIncidents is how many incidents the alerts keep open while the
// engine is measured, each sent to two channels.
const benchIncidents = 20

// BenchmarkSendsWhileAReceiverIsDown measures whether an alert receiver in
// trouble slows the engine. It runs BenchmarkSync's drain (max(b.N,
// benchLinks) new links to the sandbox CRM over loopback, 64 sends in
// flight) once per receiver below, each on a fresh database, while the
// alerts check every 100 ms and deliver every 100 ms beside it, on their
// own goroutines as main's tasks do, with benchIncidents incidents open and
// repeated every second (far more than a desk would send: a configuration's
// repeat interval is 1m at least), 40 notifications a second to a Standard
// Webhooks channel and a Slack one. The receivers are, in turn:
//
//   - up: a verifying webhook receiver and a fake Slack, answering at once;
//   - hanging: one server that takes every request and never answers, so
//     each send lasts the alerts' own time limit (10 s);
//   - refused: an address where nothing listens;
//   - up again, averaged with the first (see below).
//
// It reports syncs/s of each, x-hanging and x-refused (their syncs/s ÷
// up's: 1 is "unchanged"), and the notification tries each drain saw
// made, which show that the alerts were at work meanwhile. Run it with
// -benchtime 1x.
func BenchmarkSendsWhileAReceiverIsDown(b *testing.B) {
	for _, dialect := range []string{models.SQLite, models.Postgres} {
		b.Run("db="+dialect, func(b *testing.B) {
			rates, tries := map[string]float64{}, map[string]int64{}
			// up before and after the others, averaged: a shared machine's
			// load drifts over a run, and this keeps the drift out of the
			// ratios.
			for _, trouble := range []string{"up", "hanging", "refused", "up"} {
				rate, n := syncsWhileAlerting(b, benchDB(b, dialect), trouble)
				rates[trouble] += rate
				tries[trouble] += n
			}
			rates["up"], tries["up"] = rates["up"]/2, tries["up"]/2
			for trouble, rate := range rates {
				b.ReportMetric(rate, "syncs/s-"+trouble)
				b.ReportMetric(float64(tries[trouble]), "alert-tries-"+trouble)
			}
			b.ReportMetric(rates["hanging"]/rates["up"], "x-hanging")
			b.ReportMetric(rates["refused"]/rates["up"], "x-refused")
			b.ReportMetric(0, "ns/op") // the three runs are one op each: syncs/s say it
		})
	}
}

// syncsWhileAlerting drains max(b.N, benchLinks) links while the alerts
// deliver to receivers as trouble says, and returns the syncs per second
// and the notification tries made by the end of the drain.
func syncsWhileAlerting(b *testing.B, db *gorm.DB, trouble string) (float64, int64) {
	b.StopTimer()
	n := max(b.N, benchLinks)
	eng, crm := benchEngine(b, db, 0, false)
	enqueueOrders(b, db, eng, n)
	a := benchAlerts(b, db, trouble)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	every := func(run func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				_ = run(ctx) // a failed send is the alerts' to retry; what is measured is the engine
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}
	every(a.Check)
	every(a.Deliver)

	b.StartTimer()
	start := time.Now()
	err := eng.Drain(context.Background())
	elapsed := time.Since(start)
	b.StopTimer()
	var tries int64
	terr := db.Model(&models.IncidentNotification{}).Select("COALESCE(SUM(tries), 0)").Scan(&tries).Error
	cancel()
	wg.Wait()
	if err != nil {
		b.Fatalf("drain with the receivers %s: %v", trouble, err)
	}
	if terr != nil {
		b.Fatal(terr)
	}
	verifySynced(b, db, crm, n)
	return float64(n) / elapsed.Seconds(), tries
}

// benchAlerts are alerts with benchIncidents services paused an hour ago,
// already checked once, whose webhook and Slack channels go to receivers
// as trouble says.
func benchAlerts(b *testing.B, db *gorm.DB, trouble string) *alerts.Alerts {
	b.Helper()
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("bench-alerts-secret-of-32-bytes!"))
	var hookURL, slackURL string
	switch trouble {
	case "up":
		hookURL, slackURL = notifytest.Webhook(b, secret).URL, notifytest.Slack(b).URL+notifytest.SlackPath
	case "hanging":
		hang := notifytest.Hanging(b).URL
		hookURL, slackURL = hang, hang+notifytest.SlackPath
	case "refused":
		down := "http://" + notifytest.RefusedAddr(b)
		hookURL, slackURL = down, down+notifytest.SlackPath
	}
	cfg := config.Alerts{Repeat: time.Second, Channels: map[string]config.AlertChannel{
		"ops":  {Kind: "webhook", URL: hookURL, Secret: secret},
		"chat": {Kind: "slack", URL: slackURL},
	}}
	channels, err := notify.FromConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	clk := clock.Real{}
	for i := range benchIncidents {
		p := models.ServicePause{Service: fmt.Sprintf("paused-%d", i), PausedBy: "ana@example.com", PausedAt: clk.Now().Add(-time.Hour)}
		if _, _, err := models.Pause(db, p); err != nil {
			b.Fatal(err)
		}
	}
	a := alerts.New(db, cfg, channels, clk, slog.New(slog.DiscardHandler))
	if err := a.Check(context.Background()); err != nil {
		b.Fatal(err)
	}
	return a
}
