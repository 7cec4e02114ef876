package outbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// Three engines share one Postgres and 1,000 records while both providers
// inject 20% mixed faults, lost responses among them. Every record ends with
// exactly one remote object, every link in success or failed with a reason,
// and no provider ever sees two concurrent requests for one key.
func TestThreeEnginesOnOnePostgres(t *testing.T) {
	url := dbtest.PostgresURL(t)
	e := setup(t, dbtest.Open(t, url))
	faults := sandbox.Options{Rate5xx: 0.05, Rate429: 0.05, RateHang: 0.03, RateDropAfterCommit: 0.07, HangFor: 5 * time.Second}
	e.crm.SetOptions(faults)
	e.pay.SetOptions(faults)
	for i := range e.svcs {
		e.svcs[i].Config.Timeout = 300 * time.Millisecond
		e.svcs[i].Config.Retry = configRetry(10, 5*time.Millisecond, 50*time.Millisecond)
	}
	const n = 500
	for i := range n {
		e.upsert(order(i))
		e.upsert(payment(i))
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 3 {
		eng := New(dbtest.Open(t, url), e.svcs, clock.Real{}, e.eng.log,
			Options{Concurrency: 16, WorkerID: fmt.Sprintf("engine-%d", w), Poll: 20 * time.Millisecond})
		eng.SetRand(rand.New(rand.NewPCG(uint64(w), 9)))
		wg.Add(1)
		go func() { defer wg.Done(); require.NoError(t, eng.Run(ctx, 5*time.Second)) }()
	}
	require.Eventually(t, func() bool {
		var open int64
		e.db.Model(&models.Link{}).Where("status NOT IN ?", []models.Status{models.StatusSuccess, models.StatusFailed}).Count(&open)
		return open == 0
	}, 120*time.Second, 100*time.Millisecond, "links still open")
	stop()
	wg.Wait()

	var links []models.Link
	require.NoError(t, e.db.Find(&links).Error)
	require.Len(t, links, 2*n)
	failed := 0
	for _, l := range links {
		p := e.crm
		if l.ExternalService == "payments" {
			p = e.pay
		}
		switch l.Status {
		case models.StatusSuccess:
			require.Equal(t, 1, p.CountByKey(l.ExternalKey), "key %s", l.ExternalKey)
		case models.StatusFailed:
			failed++
			require.NotEmpty(t, l.LastError, "a failed link says why")
			require.LessOrEqual(t, p.CountByKey(l.ExternalKey), 1, "key %s", l.ExternalKey)
		default:
			t.Fatalf("link %d ended %s", l.ID, l.Status)
		}
	}
	require.Equal(t, 1, e.crm.MaxConcurrentPerKey())
	require.Equal(t, 1, e.pay.MaxConcurrentPerKey())
	t.Logf("%d links: %d failed after retries; CRM %+v; payments %+v", len(links), failed, e.crm.Requests(), e.pay.Requests())
}
