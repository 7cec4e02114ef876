package outbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// Dozens of writers upsert and delete the same few records while two
// engines send, with lost answers and a slow CRM, so that deletes and
// writes land while links are being sent. When all is quiet, every link's
// state matches its record's last one: deleted ↔ no object at the CRM,
// alive ↔ one object holding the last payload; never two objects for a key.
func TestDeletesAndWritesRacingTheEngineEndInTheRecordsLastState(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.withDeletes()
		e.crm.SetOptions(sandbox.Options{Latency: 2 * time.Millisecond, RateDropAfterCommit: 0.1, Rand: rand.New(rand.NewPCG(7, 8))})
		for i := range e.svcs {
			e.svcs[i].Config.Retry = configRetry(50, 2*time.Millisecond, 20*time.Millisecond)
			// Lost answers are the faults under test, not timeouts: a call
			// the client gives up on (500 ms, on a machine loaded by -race
			// and other packages) may still be committed by the provider
			// after a later lookup found nothing, which no sender can see.
			e.svcs[i].Config.Timeout = 10 * time.Second
			e.svcs[i].Conn = connector.NewHTTP(e.svcs[i].Name, e.svcs[i].Config, e.redactr, nil)
		}
		const writers, rounds, keys = 32, 30, 8
		ctx, stop := context.WithCancel(context.Background())
		var engines sync.WaitGroup
		for w := range 2 {
			eng := New(db, e.svcs, clock.Real{}, e.eng.log, Options{Concurrency: 8, WorkerID: fmt.Sprintf("engine-%d", w), Poll: 5 * time.Millisecond})
			engines.Add(1)
			go func() { defer engines.Done(); assert.NoError(t, eng.Run(ctx, 5*time.Second)) }()
		}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(uint64(w), 3))
				for r := range rounds {
					time.Sleep(time.Duration(rnd.IntN(4)) * time.Millisecond) // spread over the engines' sends
					id := fmt.Sprint(rnd.IntN(keys))
					var err error
					if rnd.IntN(3) == 0 {
						_, err = e.eng.Delete(context.Background(), "order", id)
						if err != nil && !assert.ErrorIs(t, err, models.ErrNotFound) {
							return
						}
						continue
					}
					_, err = e.eng.Upsert(context.Background(), "order", id, fmt.Appendf(nil, `{"title":"Order %s","by":"%d-%d"}`, id, w, r))
					if !assert.NoError(t, err) {
						return
					}
				}
			}()
		}
		wg.Wait()
		require.Eventually(t, func() bool {
			var open int64
			require.NoError(t, db.Model(&models.Link{}).Where("status IN ?",
				[]models.Status{models.StatusNew, models.StatusRetry, models.StatusProcessing}).Count(&open).Error)
			return open == 0
		}, 60*time.Second, 20*time.Millisecond, "links still open")
		stop()
		engines.Wait()

		var records []models.Record
		require.NoError(t, db.Find(&records).Error)
		deleted := 0
		for _, rec := range records {
			key := "site_order_" + rec.LocalID
			l := e.link("order", rec.LocalID, "crm")
			if rec.DeletedAt != nil {
				deleted++
				require.Equal(t, models.StatusDeleted, l.Status, "record %s is deleted: %s", rec.LocalID, l.LastError)
				require.Zero(t, e.crm.CountByKey(key), "record %s is deleted, yet the CRM holds its object; its attempts:\n%s",
					rec.LocalID, attemptLog(t, db, l.ID))
				continue
			}
			require.Equal(t, models.StatusSuccess, l.Status, "record %s lives: %s", rec.LocalID, l.LastError)
			require.Equal(t, 1, e.crm.CountByKey(key), "record %s lives: one object", rec.LocalID)
			for _, o := range e.crm.Objects() {
				if o["external_key"] == key {
					require.Equal(t, l.ExternalID, o["id"])
					require.Contains(t, rec.Payload, fmt.Sprintf(`"by":%q`, o["by"]), "record %s: the object holds the last payload", rec.LocalID)
				}
			}
		}
		require.Equal(t, 1, e.crm.MaxConcurrentPerKey(), "one request at a time per key")
		t.Logf("%d records, %d deleted at the end; CRM %+v", len(records), deleted, e.crm.Requests())
	})
}

// attemptLog lists a link's attempts, one a line, for a failure message.
func attemptLog(t *testing.T, db *gorm.DB, linkID int64) string {
	attempts, err := models.LinkAttempts(db, linkID)
	require.NoError(t, err)
	var b strings.Builder
	for _, a := range attempts {
		fmt.Fprintf(&b, "%s %s %s HTTP %d %s %s\n", a.CreatedAt.Format("15:04:05.000"), a.Worker, a.Operation, a.HTTPCode, a.Outcome, a.Error)
	}
	return b.String()
}
