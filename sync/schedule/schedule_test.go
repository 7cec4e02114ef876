package schedule

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models/dbtest"
)

func TestTasksRunAndRecordTheirOutcome(t *testing.T) {
	var runs atomic.Int32
	s, err := New([]Task{
		{Name: "count", Every: 50 * time.Millisecond, Run: func(context.Context) error { runs.Add(1); return nil }},
		{Name: "fails", Every: time.Hour, Run: func(context.Context) error { return errors.New("provider down") }},
		{Name: "panics", Every: time.Hour, Run: func(context.Context) error { panic("boom") }},
	}, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	s.Start()
	require.NoError(t, s.RunNow("fails"))
	require.NoError(t, s.RunNow("panics"))
	require.Eventually(t, func() bool {
		st := s.States()
		return runs.Load() >= 3 && st[1].Runs == 1 && st[2].Runs == 1
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, s.Stop())

	st := s.States()
	require.Equal(t, []string{"count", "fails", "panics"}, []string{st[0].Name, st[1].Name, st[2].Name})
	require.Empty(t, st[0].LastError)
	require.Equal(t, "provider down", st[1].LastError)
	require.Contains(t, st[2].LastError, "panic: boom")
	require.Error(t, s.RunNow("nope"))
}

func TestBadTaskIsRefused(t *testing.T) {
	_, err := New([]Task{{Name: "x", Every: 0, Run: func(context.Context) error { return nil }}}, nil, slog.Default())
	require.ErrorContains(t, err, `task "x"`)
}

// Two instances on one Postgres: while one holds a task's lock, the other
// cannot take it; once released, it can.
func TestPGLockerRunsATaskOnOneInstanceAtATime(t *testing.T) {
	url := dbtest.PostgresURL(t)
	a, b := dbtest.Open(t, url), dbtest.Open(t, url)
	sqlA, _ := a.DB()
	sqlB, _ := b.DB()
	ctx := context.Background()

	held, err := PGLocker{DB: sqlA}.Lock(ctx, "reconcile")
	require.NoError(t, err)
	_, err = PGLocker{DB: sqlB}.Lock(ctx, "reconcile")
	require.ErrorIs(t, err, ErrHeldElsewhere)
	other, err := PGLocker{DB: sqlB}.Lock(ctx, "another-task")
	require.NoError(t, err, "other tasks are not blocked")
	require.NoError(t, other.Unlock(ctx))

	require.NoError(t, held.Unlock(ctx))
	again, err := PGLocker{DB: sqlB}.Lock(ctx, "reconcile")
	require.NoError(t, err)
	require.NoError(t, again.Unlock(ctx))
}
