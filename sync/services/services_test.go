package services_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/sandbox"
	"github.com/syncdesk/syncdesk/sync/services"
)

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

var names = []string{"crm", "payments"}

// env is an engine over two sandbox providers, with a Pauser wired into its
// claims the way main does it.
type env struct {
	t      *testing.T
	db     *gorm.DB
	clock  *clock.Fake
	crm    *sandbox.Provider
	pay    *sandbox.Provider
	eng    *outbox.Engine
	pauser *services.Pauser
	svcs   []outbox.Service
}

func setup(t *testing.T, db *gorm.DB) *env {
	t.Helper()
	e := &env{t: t, db: db, clock: clock.NewFake(epoch), crm: sandbox.NewCRM(sandbox.Options{}), pay: sandbox.NewPayments(sandbox.Options{})}
	crmSrv, paySrv := httptest.NewServer(e.crm), httptest.NewServer(e.pay)
	t.Cleanup(crmSrv.Close)
	t.Cleanup(paySrv.Close)
	retry := config.Retry{MaxAttempts: 3, Base: time.Second, Max: time.Minute}
	svcs := []outbox.Service{
		{Name: "crm", Config: config.Service{Kind: "http", BaseURL: crmSrv.URL, Timeout: 2 * time.Second, Retry: retry,
			Objects: map[string]config.Object{"order": {Remote: "deal", ExternalKey: "site_order_{local_id}", KeyField: "external_key",
				IDField: "id", Create: "POST /deals", Update: "PUT /deals/{external_id}", Lookup: "GET /deals?external_key={external_key}"}}}},
		{Name: "payments", Config: config.Service{Kind: "http", BaseURL: paySrv.URL, Timeout: 2 * time.Second, Retry: retry,
			IdempotencyHeader: "Idempotency-Key",
			Objects: map[string]config.Object{"payment": {Remote: "payment", ExternalKey: "site_payment_{local_id}", KeyField: "external_key",
				IDField: "id", Create: "POST /payments", Update: "PUT /payments/{external_id}"}}}},
	}
	for i := range svcs {
		svcs[i].Conn = connector.NewHTTP(svcs[i].Name, svcs[i].Config, redact.New(nil), nil)
	}
	log := slog.New(slog.DiscardHandler)
	e.svcs = svcs
	e.eng = outbox.New(db, svcs, e.clock, log, outbox.Options{Concurrency: 4})
	e.pauser = services.NewPauser(db, names, e.clock, log)
	e.eng.SetPaused(e.pauser.Paused)
	return e
}

// feed queues n orders (to the CRM) and n payments.
func (e *env) feed(from, n int) {
	e.t.Helper()
	for i := from; i < from+n; i++ {
		_, err := e.eng.Upsert(context.Background(), "order", fmt.Sprint(i), fmt.Appendf(nil, `{"title":"Order %d"}`, i))
		require.NoError(e.t, err)
		_, err = e.eng.Upsert(context.Background(), "payment", fmt.Sprint(i), fmt.Appendf(nil, `{"amount":%d,"currency":"EUR"}`, 100+i))
		require.NoError(e.t, err)
	}
}

// statuses counts one service's links by status.
func (e *env) statuses(service string) map[models.Status]int {
	e.t.Helper()
	var links []models.Link
	require.NoError(e.t, e.db.Where("external_service = ?", service).Find(&links).Error)
	out := map[models.Status]int{}
	for _, l := range links {
		out[l.Status]++
	}
	return out
}

func TestPausedServiceIsNotClaimedAndOthersFlow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		ctx := context.Background()
		_, created, err := e.pauser.Pause(ctx, "crm", "ana@example.com", "provider maintenance")
		require.NoError(t, err)
		require.True(t, created)

		e.feed(1, 5)
		require.NoError(t, e.eng.Drain(ctx))
		require.Equal(t, map[models.Status]int{models.StatusNew: 5}, e.statuses("crm"), "a paused service's links wait as new")
		require.Zero(t, e.crm.Requests().Total, "nothing may reach a paused service")
		require.Equal(t, map[models.Status]int{models.StatusSuccess: 5}, e.statuses("payments"), "other services keep flowing")

		was, err := e.pauser.Resume(ctx, "crm", "ana@example.com")
		require.NoError(t, err)
		require.True(t, was)
		require.NoError(t, e.eng.Drain(ctx))
		require.Equal(t, map[models.Status]int{models.StatusSuccess: 5}, e.statuses("crm"), "after a resume the waiting links go out")
		require.Equal(t, 5, e.crm.Requests().Creates)
	})
}

// A pause made by one instance reaches another instance's claims once its
// cache has aged past the TTL, and not a query per claim before that.
func TestPauseReachesOtherInstancesWithinTheTTL(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		other := services.NewPauser(db, names, e.clock, slog.New(slog.DiscardHandler))
		require.Empty(t, other.Paused())

		_, _, err := e.pauser.Pause(context.Background(), "crm", "ana@example.com", "")
		require.NoError(t, err)
		require.Equal(t, []string{"crm"}, e.pauser.Paused(), "the instance that paused sees it at once")
		require.Empty(t, other.Paused(), "another instance trusts its cache until the TTL")

		e.clock.Advance(services.CacheTTL)
		require.Equal(t, []string{"crm"}, other.Paused(), "after the TTL every instance sees the pause")

		_, err = e.pauser.Resume(context.Background(), "crm", "bo@example.com")
		require.NoError(t, err)
		e.clock.Advance(services.CacheTTL)
		require.Empty(t, other.Paused())
	})
}

func TestConcurrentPausesMakeOneRow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		const n = 20
		var wg sync.WaitGroup
		var mu sync.Mutex
		created, holders := 0, map[string]bool{}
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				held, c, err := e.pauser.Pause(context.Background(), "crm", fmt.Sprintf("op%d@example.com", i), "maintenance")
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				defer mu.Unlock()
				holders[held.PausedBy] = true
				if c {
					created++
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, 1, created, "exactly one pause is created")
		require.Len(t, holders, 1, "every caller is told the same pause holds")
		pauses, err := models.ListPauses(db)
		require.NoError(t, err)
		require.Len(t, pauses, 1)
		require.True(t, holders[pauses[0].PausedBy])
	})
}

func TestPauseAndResumeAreIdempotent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		ctx := context.Background()
		first, created, err := e.pauser.Pause(ctx, "crm", "ana@example.com", "  provider\n maintenance ")
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, "provider maintenance", first.Reason, "the reason is one line of plain words")
		require.Equal(t, epoch, first.PausedAt.UTC())

		e.clock.Advance(time.Minute)
		again, created, err := e.pauser.Pause(ctx, "crm", "bo@example.com", "other")
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, "ana@example.com", again.PausedBy, "the first pause stands")
		require.Equal(t, epoch, again.PausedAt.UTC())

		paused, err := models.IsPaused(db, "crm")
		require.NoError(t, err)
		require.True(t, paused)

		for i, want := range []bool{true, false} {
			was, err := e.pauser.Resume(ctx, "crm", "bo@example.com")
			require.NoError(t, err)
			require.Equal(t, want, was, "resume %d", i+1)
		}
		paused, err = models.IsPaused(db, "crm")
		require.NoError(t, err)
		require.False(t, paused)
	})
}

func TestPauseRefusesUnknownServicesAndLongReasons(t *testing.T) {
	e := setup(t, dbtest.SQLite(t))
	_, _, err := e.pauser.Pause(context.Background(), "nope", "ana@example.com", "")
	require.ErrorIs(t, err, models.ErrNotFound)

	_, _, err = e.pauser.Pause(context.Background(), "crm", "ana@example.com", strings.Repeat("é", services.MaxReason+1))
	var inv *models.InvalidError
	require.True(t, errors.As(err, &inv), "a long reason is bad input, got %v", err)
	require.Empty(t, e.pauser.Paused())
}

// When the table cannot be read, the engine keeps the last known pauses:
// a database hiccup must not resume a paused service.
func TestPausedKeepsTheLastKnownAnswerWhenTheReadFails(t *testing.T) {
	path := dbtest.SQLitePath(t)
	db := dbtest.Open(t, path)
	e := setup(t, db)
	_, _, err := e.pauser.Pause(context.Background(), "crm", "ana@example.com", "")
	require.NoError(t, err)
	require.Equal(t, []string{"crm"}, e.pauser.Paused())

	require.NoError(t, models.Close(db))
	e.clock.Advance(services.CacheTTL)
	require.Equal(t, []string{"crm"}, e.pauser.Paused())
	_, err = e.pauser.List(context.Background())
	require.Error(t, err, "the failed read is reported to callers that can show it")
}
