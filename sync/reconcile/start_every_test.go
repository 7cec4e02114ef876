package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// everyService builds a reconciler, as instance worker, over three
// listable services and one that cannot be listed.
func (e *env) everyService(worker string) *Reconciler {
	unlistable := e.svc
	o := unlistable.Objects["order"]
	o.List = ""
	unlistable.Objects = map[string]config.Object{"order": o}
	var services []Service
	for _, name := range []string{"crm", "shop", "billing"} {
		services = append(services, Service{Name: name, Config: e.svc, Conn: e.conn})
	}
	services = append(services, Service{Name: "mail", Config: unlistable, Conn: e.conn})
	r := New(e.db, services, e.clock, e.log, Options{WorkerID: worker})
	e.t.Cleanup(r.Close)
	return r
}

func serviceNames(started []Started) []string {
	var out []string
	for _, st := range started {
		out = append(out, st.Service)
	}
	return out
}

// StartEvery starts a run of every reconcilable service on the operator's
// behalf, and names, without starting it twice, a service already being
// reconciled elsewhere. A closed reconciler starts nothing.
func TestStartEveryStartsEachServiceAndNamesTheBusy(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		rec := e.everyService("test")
		now := e.clock.Now()
		elsewhere := models.ReconciliationRun{Service: "shop", Owner: "other-host", TriggeredBy: "scheduler", StartedAt: now, HeartbeatAt: &now}
		require.NoError(t, models.StartRun(db, &elsewhere))

		started, busy, err := rec.StartEvery(context.Background(), "ops@example.com")
		require.NoError(t, err)
		require.Equal(t, []string{"shop"}, busy)
		require.Equal(t, []string{"billing", "crm"}, serviceNames(started), "every listable service but the busy one, in order")
		for _, st := range started {
			r, err := models.RunByID(db, st.RunID)
			require.NoError(t, err)
			require.Equal(t, st.Service, r.Service)
			require.Equal(t, "ops@example.com", r.TriggeredBy)
			require.Equal(t, "test", r.Owner)
		}

		rec.Close() // waits for the two runs to end
		var before int64
		require.NoError(t, db.Model(&models.ReconciliationRun{}).Count(&before).Error)
		started, busy, err = rec.StartEvery(context.Background(), "ops@example.com")
		require.ErrorIs(t, err, ErrClosed)
		require.Empty(t, started)
		require.Empty(t, busy)
		var after int64
		require.NoError(t, db.Model(&models.ReconciliationRun{}).Count(&after).Error)
		require.Equal(t, before, after, "a closed reconciler started a run")
	})
}

// Clicks on every instance at once start each service's run once: the
// others see it busy.
func TestStartEveryAtOnceFromManyInstancesStartsEachServiceOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.crm.Insert(map[string]any{"external_key": key(1), "title": "x"})
		e.crm.SetOptions(sandbox.Options{Latency: 2 * time.Second}) // every run is still listing when the clicks are done
		var recs []*Reconciler
		for i := range 4 {
			recs = append(recs, e.everyService(fmt.Sprint("instance-", i)))
		}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			started = map[string]int{}
			busy    = map[string]int{}
		)
		for i := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, b, err := recs[i%len(recs)].StartEvery(context.Background(), fmt.Sprintf("op%d@example.com", i))
				if err != nil {
					t.Errorf("start every: %v", err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, name := range serviceNames(s) {
					started[name]++
				}
				for _, name := range b {
					busy[name]++
				}
			}()
		}
		wg.Wait()
		require.Equal(t, map[string]int{"billing": 1, "crm": 1, "shop": 1}, started)
		require.Equal(t, map[string]int{"billing": 31, "crm": 31, "shop": 31}, busy)
		for _, r := range recs {
			r.Close()
		}
		runs, err := models.ListRuns(db, models.RunFilter{})
		require.NoError(t, err)
		require.Len(t, runs, 3)
		require.False(t, slices.ContainsFunc(runs, func(r models.ReconciliationRun) bool { return r.Status == models.RunRunning }),
			"Close left a run marked running")
	})
}
