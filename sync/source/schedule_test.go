package source

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/schedule"
)

// Three instances on one syncdesk Postgres, each with the source's task on
// its schedule: the source is drained by one of them at a time, and all of
// its rows are read once.
func TestSourceTaskRunsOnOneInstanceAtATime(t *testing.T) {
	t.Parallel()
	b := newBiz(t, "postgres")
	b.createOutbox(t)
	url := dbtest.PostgresURL(t)
	cfg := b.outboxSource()
	cfg.Poll, cfg.BatchSize = 20*time.Millisecond, 20
	var active, overlaps, runs atomic.Int64
	var scheds []*schedule.Scheduler
	for i := range 3 {
		db := dbtest.Open(t, url)
		task := newWorld(t, db, nil).source(t, cfg).Task()
		drain := task.Run
		task.Run = func(ctx context.Context) error {
			if active.Add(1) > 1 {
				overlaps.Add(1)
			}
			defer active.Add(-1)
			runs.Add(1)
			time.Sleep(5 * time.Millisecond) // widen the window an overlap would show in
			return drain(ctx)
		}
		s, err := schedule.New([]schedule.Task{task}, schedule.Options{DB: db, Instance: fmt.Sprint("instance-", i),
			Tick: 10 * time.Millisecond, Lease: 2 * time.Second})
		require.NoError(t, err)
		s.Start()
		scheds = append(scheds, s)
	}
	ctx := context.Background()
	const rows = 400
	for i := range rows {
		require.NoError(t, b.insert(ctx, b.db, "item", fmt.Sprint(i), payload(i), "upsert"))
	}
	db := dbtest.Open(t, url)
	deadline := time.Now().Add(30 * time.Second)
	for cursor(t, db).LastID < rows && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, s := range scheds {
		require.NoError(t, s.Stop())
	}
	require.EqualValues(t, rows, cursor(t, db).LastID)
	require.EqualValues(t, rows, cursor(t, db).RowsRead)
	require.Greater(t, runs.Load(), int64(3), "drained on the schedule")
	require.Zero(t, overlaps.Load(), "two instances drained the source at once")
}
