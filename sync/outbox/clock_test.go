package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
)

// Three instances share a database; one's clock runs 10 minutes ahead of the
// others', one 10 minutes behind — more than a lease. On the database's
// clock (DatabaseClock), the one ahead leaves a live lease of another alone,
// and the one behind takes leases that live a lease long for everyone, so
// no one rescues them early. On SQLite, which one machine shares, the
// database's clock is that machine's: the offsets are played here, and the
// engines keep to the database's time all the same.
func TestAnInstanceTenMinutesOffRescuesNoLiveLease(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		instance := func(name string, off time.Duration) *Engine {
			clk, err := DatabaseClock(context.Background(), db, clock.Offset{Clock: clock.Real{}, By: off})
			require.NoError(t, err)
			return New(db, e.svcs, clk, e.eng.log, Options{WorkerID: name})
		}
		onTime, ahead, behind := instance("on-time", 0), instance("ahead", 10*time.Minute), instance("behind", -10*time.Minute)
		e.upsert(order(1))
		e.upsert(order(2))

		held := claimOne(t, onTime) // and still sending
		n, err := ahead.Rescue(context.Background())
		require.NoError(t, err)
		require.Zero(t, n, "the instance 10 minutes ahead rescued a live lease")

		taken := claimOne(t, behind)
		dbNow, err := models.DatabaseNow(db)
		require.NoError(t, err)
		require.WithinDuration(t, dbNow.Add(behind.opts.Lease), *taken.LockedUntil, 2*time.Second,
			"the lease of the instance behind runs a lease from the database's now")
		for _, rescuer := range []*Engine{onTime, ahead} {
			n, err := rescuer.Rescue(context.Background())
			require.NoError(t, err)
			require.Zero(t, n, "%s rescued the live lease of the instance 10 minutes behind", rescuer.WorkerID())
		}

		for _, l := range []models.Link{held, taken} {
			now := e.link(l.LocalType, l.LocalID, l.ExternalService)
			require.Equal(t, models.StatusProcessing, now.Status)
			require.Equal(t, l.LeaseOwner, now.LeaseOwner, "the lease stays with its holder")
			require.Empty(t, e.attempts(l.ID), "no attempt was logged as lost")
		}
	})
}

// claimOne claims one due link as eng's run loop does.
func claimOne(t *testing.T, eng *Engine) models.Link {
	t.Helper()
	p := &pipe{e: eng, jobs: make(chan job, 1)}
	n, err := p.claim(context.Background(), 1)
	require.NoError(t, err)
	require.Equal(t, 1, n, "%s claimed nothing", eng.WorkerID())
	return (<-p.jobs).link
}
