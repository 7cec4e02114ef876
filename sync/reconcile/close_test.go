package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// At a stop, main closes the reconciler after HTTP has drained and before
// the database: a run asked for after that is refused, and writes nothing.
func TestAClosedReconcilerRefusesNewRuns(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.rec.Close()

		_, err := e.rec.Start(context.Background(), "crm", RunOptions{TriggeredBy: "ana@example.com"})
		require.ErrorIs(t, err, ErrClosed)
		_, err = e.rec.Run(context.Background(), "crm", RunOptions{TriggeredBy: "scheduler"})
		require.ErrorIs(t, err, ErrClosed)
		var runs int64
		require.NoError(t, db.Model(&models.ReconciliationRun{}).Count(&runs).Error)
		require.Zero(t, runs, "a refused run leaves no row")
		e.rec.Close() // a second Close is harmless
	})
}

// Close races runs being started from many goroutines (as HTTP handlers and
// the scheduler do): each Start either is refused or its run has written how
// it ended by the time Close returns, so nothing writes after the database
// is closed. -race checks the WaitGroup is never added to while Close waits.
func TestCloseWaitsForEveryRunStartedBesideIt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		for n := 1; n <= 20; n++ {
			e.crm.Insert(map[string]any{"external_key": key(n), "title": fmt.Sprint("Order ", n)})
		}
		e.crm.SetOptions(sandbox.Options{Latency: 20 * time.Millisecond})
		var services []Service
		for i := range 8 {
			services = append(services, Service{Name: fmt.Sprintf("crm%d", i), Config: e.svc, Conn: e.conn})
		}
		rec := New(db, services, e.clock, e.log, Options{WorkerID: "test"})

		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			started []int64
		)
		for g := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					var err error
					name := services[(g+i)%len(services)].Name
					if g%4 == 0 { // some as the scheduler does, in the foreground
						_, err = rec.Run(context.Background(), name, RunOptions{TriggeredBy: "scheduler"})
					} else {
						var id int64
						if id, err = rec.Start(context.Background(), name, RunOptions{TriggeredBy: "ana@example.com"}); err == nil {
							mu.Lock()
							started = append(started, id)
							mu.Unlock()
						}
					}
					if errors.Is(err, ErrClosed) {
						return
					}
				}
			}()
		}
		time.Sleep(300 * time.Millisecond)
		rec.Close()

		var running int64
		require.NoError(t, db.Model(&models.ReconciliationRun{}).Where("status = ?", models.RunRunning).Count(&running).Error)
		require.Zero(t, running, "every run started before Close returned has ended")
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, started, "runs were started while Close came")
		var ended int64
		require.NoError(t, db.Model(&models.ReconciliationRun{}).Where("id IN ? AND finished_at IS NOT NULL", started).Count(&ended).Error)
		require.EqualValues(t, len(started), ended, "each background run wrote its end")
		require.NoError(t, db.Model(&models.ReconciliationRun{}).Where("status = ?", models.RunRunning).Count(&running).Error)
		require.Zero(t, running, "no run began after Close returned")
	})
}

// A write of how a run ended that fails for a moment (no connection to be
// had) is tried again: a run left marked running would bar the service's
// next run until its heartbeat went stale. The fault is injected in front
// of the real database, on the first two end writes.
func TestARunsEndIsWrittenThroughAMomentaryFailure(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.crm.Insert(map[string]any{"external_key": key(1), "title": "Order 1"})
		var mu sync.Mutex
		failed := 0
		require.NoError(t, db.Callback().Update().Before("gorm:update").Register("test:end_fails", func(tx *gorm.DB) {
			set, ok := tx.Statement.Dest.(map[string]any)
			_, ends := set["finished_at"]
			_, beats := set["heartbeat_at"] // a sweep's end has none
			if !ok || !ends || !beats || tx.Statement.Table != "reconciliation_runs" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if failed < 2 {
				failed++
				_ = tx.AddError(errors.New("failed to connect: FATAL: sorry, too many clients already"))
			}
		}))

		run, err := e.rec.Run(context.Background(), "crm", RunOptions{TriggeredBy: "scheduler"})
		require.NoError(t, err)
		require.Equal(t, models.RunCompleted, run.Status)
		require.NotNil(t, run.FinishedAt)
		mu.Lock()
		require.Equal(t, 2, failed, "the end write failed twice before it held")
		mu.Unlock()
		_, err = e.rec.Run(context.Background(), "crm", RunOptions{TriggeredBy: "scheduler"})
		require.NoError(t, err, "the service's next run is not barred")
	})
}
