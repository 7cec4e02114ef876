package outbox

import (
	"bytes"
	"context"
	"fmt"
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
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// env is a test's world: a database, the two sandbox providers as real
// HTTP servers on loopback, and an engine on a fake clock.
type env struct {
	t       *testing.T
	db      *gorm.DB
	clock   *clock.Fake
	crm     *sandbox.Provider
	pay     *sandbox.Provider
	eng     *Engine
	svcs    []Service
	logBuf  *bytes.Buffer
	redactr *redact.Redactor
}

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func crmConfig(url string) config.Service {
	return config.Service{Kind: "http", BaseURL: url, Timeout: 500 * time.Millisecond,
		Retry: config.Retry{MaxAttempts: 6, Base: 2 * time.Second, Max: 15 * time.Minute},
		Objects: map[string]config.Object{"order": {Remote: "deal", ExternalKey: "site_order_{local_id}", KeyField: "external_key",
			IDField: "id", Create: "POST /deals", Update: "PUT /deals/{external_id}",
			Lookup: "GET /deals?external_key={external_key}", List: "GET /deals?cursor={cursor}"}}}
}

func payConfig(url string) config.Service {
	return config.Service{Kind: "http", BaseURL: url, Timeout: 500 * time.Millisecond, IdempotencyHeader: "Idempotency-Key",
		Retry: config.Retry{MaxAttempts: 6, Base: 2 * time.Second, Max: 15 * time.Minute},
		Objects: map[string]config.Object{"payment": {Remote: "payment", ExternalKey: "site_payment_{local_id}", KeyField: "external_key",
			IDField: "id", Create: "POST /payments", Update: "PUT /payments/{external_id}", List: "GET /payments?cursor={cursor}"}}}
}

func setup(t *testing.T, db *gorm.DB) *env {
	t.Helper()
	e := &env{t: t, db: db, clock: clock.NewFake(epoch), logBuf: &bytes.Buffer{}, redactr: redact.New(nil)}
	e.crm = sandbox.NewCRM(sandbox.Options{Rand: rand.New(rand.NewPCG(1, 2))})
	e.pay = sandbox.NewPayments(sandbox.Options{Rand: rand.New(rand.NewPCG(3, 4)), Now: e.clock.Now})
	crmSrv, paySrv := httptest.NewServer(e.crm), httptest.NewServer(e.pay)
	t.Cleanup(crmSrv.Close)
	t.Cleanup(paySrv.Close)
	e.svcs = []Service{
		{Name: "crm", Config: crmConfig(crmSrv.URL)},
		{Name: "payments", Config: payConfig(paySrv.URL)},
	}
	for i := range e.svcs {
		e.svcs[i].Conn = connector.NewHTTP(e.svcs[i].Name, e.svcs[i].Config, e.redactr, nil)
	}
	e.eng = e.engine(db, Options{Concurrency: 8})
	return e
}

// engine builds another engine on the same services (another "instance").
func (e *env) engine(db *gorm.DB, opts Options) *Engine {
	log := slog.New(redact.NewHandler(slog.NewTextHandler(e.logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}), e.redactr))
	eng := New(db, e.svcs, e.clock, log, opts)
	eng.SetRand(rand.New(rand.NewPCG(5, 6)))
	return eng
}

func (e *env) upsert(typ, id, payload string) Enqueued {
	e.t.Helper()
	res, err := e.eng.Upsert(context.Background(), typ, id, []byte(payload))
	require.NoError(e.t, err)
	return res
}

func order(id int) (string, string, string) {
	return "order", fmt.Sprint(id), fmt.Sprintf(`{"title":"Order %d","total":"%d.00"}`, id, 10+id)
}

func payment(id int) (string, string, string) {
	return "payment", fmt.Sprint(id), fmt.Sprintf(`{"amount":%d,"currency":"EUR"}`, 100+id)
}

// settle drains the engine and moves the fake clock past every backoff
// until no link waits, or fails after rounds.
func (e *env) settle(eng *Engine) {
	e.t.Helper()
	settle(e.t, e.db, eng, e.clock, 16*time.Minute, 40)
}

// settle drains eng, moving clk on by step between rounds, until no link
// waits; it fails the test after rounds.
func settle(t *testing.T, db *gorm.DB, eng *Engine, clk *clock.Fake, step time.Duration, rounds int) {
	t.Helper()
	for range rounds {
		require.NoError(t, eng.Drain(context.Background()))
		var waiting int64
		require.NoError(t, db.Model(&models.Link{}).Where("status IN ?", []models.Status{models.StatusNew, models.StatusRetry}).Count(&waiting).Error)
		if waiting == 0 {
			return
		}
		clk.Advance(step)
	}
	t.Fatalf("links still waiting after %d rounds", rounds)
}

func (e *env) link(typ, id, service string) models.Link {
	e.t.Helper()
	var l models.Link
	require.NoError(e.t, e.db.Where("local_type = ? AND local_id = ? AND external_service = ?", typ, id, service).Take(&l).Error)
	return l
}

func (e *env) attempts(linkID int64) []models.Attempt {
	e.t.Helper()
	as, err := models.LinkAttempts(e.db, linkID)
	require.NoError(e.t, err)
	return as
}

func configRetry(attempts int, base, max time.Duration) config.Retry {
	return config.Retry{MaxAttempts: attempts, Base: base, Max: max}
}
