package reconcile

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// env is a test's world: a database, the sandbox CRM as a real HTTP server
// on loopback, the outbox engine that pushes to it, and a reconciler, all on
// one fake clock.
type env struct {
	t     testing.TB
	db    *gorm.DB
	clock *clock.Fake
	crm   *sandbox.Provider
	svc   config.Service
	conn  *connector.HTTP
	eng   *outbox.Engine
	rec   *Reconciler
	log   *slog.Logger
}

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func crmConfig(url string) config.Service {
	return config.Service{Kind: "http", BaseURL: url, Timeout: 2 * time.Second,
		Retry: config.Retry{MaxAttempts: 6, Base: 2 * time.Second, Max: 15 * time.Minute},
		Objects: map[string]config.Object{"order": {Remote: "deal", ExternalKey: "site_order_{local_id}", KeyField: "external_key",
			IDField: "id", Create: "POST /deals", Update: "PUT /deals/{external_id}",
			Lookup: "GET /deals?external_key={external_key}", List: "GET /deals?cursor={cursor}"}}}
}

// setup builds the world; change adjusts the CRM's service config first.
func setup(t testing.TB, db *gorm.DB, change ...func(*config.Service)) *env {
	t.Helper()
	e := &env{t: t, db: db, clock: clock.NewFake(epoch), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e.crm = sandbox.NewCRM(sandbox.Options{Rand: rand.New(rand.NewPCG(1, 2))})
	srv := httptest.NewServer(e.crm)
	t.Cleanup(srv.Close)
	e.svc = crmConfig(srv.URL)
	for _, c := range change {
		c(&e.svc)
	}
	e.conn = connector.NewHTTP("crm", e.svc, redact.New(nil), nil)
	e.eng = outbox.New(db, []outbox.Service{{Name: "crm", Config: e.svc, Conn: e.conn}}, e.clock, e.log, outbox.Options{Concurrency: 4})
	e.rec = e.reconciler(e.conn, Options{})
	return e
}

// reconciler builds a reconciler over the CRM listed through conn.
func (e *env) reconciler(conn Lister, opts Options) *Reconciler {
	opts.WorkerID = "test"
	r := New(e.db, []Service{{Name: "crm", Config: e.svc, Conn: conn}}, e.clock, e.log, opts)
	e.t.Cleanup(r.Close)
	return r
}

func key(n int) string { return fmt.Sprintf("site_order_%d", n) }

func orderPayload(n int) string {
	return fmt.Sprintf(`{"title":"Order %d","total":"%d.00"}`, n, 10+n)
}

// seedOrders stores orders from..to through the outbox and sends them all.
func (e *env) seedOrders(from, to int) {
	e.t.Helper()
	for n := from; n <= to; n++ {
		_, err := e.eng.Upsert(context.Background(), "order", fmt.Sprint(n), []byte(orderPayload(n)))
		require.NoError(e.t, err)
	}
	e.settle()
}

// orphanRecord stores an order without any link, as if it predated the route.
func (e *env) orphanRecord(n int) {
	e.t.Helper()
	canonical, hash, err := models.CanonicalPayload([]byte(orderPayload(n)))
	require.NoError(e.t, err)
	_, err = models.UpsertRecord(e.db, "order", fmt.Sprint(n), canonical, hash, e.clock.Now())
	require.NoError(e.t, err)
}

// settle drains the outbox, moving the clock past backoffs, until no link waits.
func (e *env) settle() {
	e.t.Helper()
	for range 20 {
		require.NoError(e.t, e.eng.Drain(context.Background()))
		var waiting int64
		require.NoError(e.t, e.db.Model(&models.Link{}).Where("status IN ?", []models.Status{models.StatusNew, models.StatusRetry}).Count(&waiting).Error)
		if waiting == 0 {
			return
		}
		e.clock.Advance(16 * time.Minute)
	}
	e.t.Fatal("links still waiting after 20 rounds")
}

// reconcile runs the CRM's reconciliation a second after the last change
// and returns its detail.
func (e *env) reconcile(o RunOptions) *models.RunDetail {
	e.t.Helper()
	e.clock.Advance(time.Second)
	run, err := e.rec.Run(context.Background(), "crm", o)
	require.NoError(e.t, err)
	return e.detail(run.ID)
}

func (e *env) detail(id int64) *models.RunDetail {
	e.t.Helper()
	d, err := models.RunDetailByID(e.db, id)
	require.NoError(e.t, err)
	return d
}

// totals maps each kind found to its number of discrepancies.
func totals(d *models.RunDetail) map[string]int64 {
	out := map[string]int64{}
	for _, k := range d.Kinds {
		if k.Total > 0 {
			out[k.Kind] = k.Total
		}
	}
	return out
}

// remoteIDs maps each external key to the ids of the CRM's objects carrying it.
func (e *env) remoteIDs() map[string][]string {
	out := map[string][]string{}
	for _, o := range e.crm.Objects() {
		k, _ := o["external_key"].(string)
		out[k] = append(out[k], o["id"].(string))
	}
	return out
}

func (e *env) link(n int) models.Link {
	e.t.Helper()
	var l models.Link
	require.NoError(e.t, e.db.Where("local_type = 'order' AND local_id = ? AND external_service = 'crm'", fmt.Sprint(n)).Take(&l).Error)
	return l
}

func (e *env) countLinks() int64 {
	e.t.Helper()
	var n int64
	require.NoError(e.t, e.db.Model(&models.Link{}).Count(&n).Error)
	return n
}
