package alerts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/notify"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// recorder is a channel that keeps what it was sent; fail decides, per
// message, what the send answers.
type recorder struct {
	mu    sync.Mutex
	sent  []notify.Message
	tries int
	fail  func(m notify.Message) error
}

func (r *recorder) Send(ctx context.Context, m notify.Message) error {
	r.mu.Lock()
	r.tries++
	fail := r.fail
	r.mu.Unlock()
	if fail != nil {
		if err := fail(m); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, m)
	return nil
}

// failFirst makes the first n sends fail as a receiver that refuses the
// connection does.
func (r *recorder) failFirst(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = func(notify.Message) error {
		if n > 0 {
			n--
			return errors.New("dial tcp 127.0.0.1:9: connection refused")
		}
		return nil
	}
}

func (r *recorder) messages() []notify.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notify.Message(nil), r.sent...)
}

// bundle is what a test of the alerts needs.
type bundle struct {
	db    *gorm.DB
	clock *clock.Fake
	rec   *recorder
	a     *Alerts
}

func setup(t *testing.T, db *gorm.DB, cfg config.Alerts) *bundle {
	t.Helper()
	rec := &recorder{}
	b := setupChannels(t, db, cfg, map[string]notify.Channel{"rec": rec})
	b.rec = rec
	return b
}

// setupChannels is setup with the channels given instead of a recorder.
func setupChannels(t *testing.T, db *gorm.DB, cfg config.Alerts, channels map[string]notify.Channel) *bundle {
	t.Helper()
	b := &bundle{db: db, clock: clock.NewFake(t0)}
	b.a = New(db, cfg, channels, b.clock, slog.New(slog.DiscardHandler))
	b.a.jitter = func() float64 { return 0 }
	return b
}

// step checks the rules and delivers what they queued.
func (b *bundle) step(t *testing.T) {
	t.Helper()
	require.NoError(t, b.a.Check(context.Background()))
	require.NoError(t, b.a.Deliver(context.Background()))
}

// states are the states of the messages sent, in order.
func (b *bundle) states() []notify.State {
	var out []notify.State
	for _, m := range b.rec.messages() {
		out = append(out, m.State)
	}
	return out
}

func addLinks(t *testing.T, db *gorm.DB, service string, status models.Status, n int, due time.Time) {
	t.Helper()
	links := make([]models.Link, n)
	for i := range links {
		id := fmt.Sprintf("%s-%s-%d-%d", service, status, due.Unix(), i)
		links[i] = models.Link{LocalType: "order", LocalID: id, ExternalService: service, ExternalKey: "k-" + id,
			Status: status, NextAttemptAt: due, CreatedAt: due, UpdatedAt: due}
	}
	require.NoError(t, db.CreateInBatches(&links, 100).Error)
}

func finishTask(t *testing.T, db *gorm.DB, name, failure string, now time.Time) {
	t.Helper()
	c := models.TaskClaim{Name: name, Token: fmt.Sprint(now.UnixNano()), Instance: "test", Now: now, Until: now.Add(time.Minute)}
	won, err := models.ClaimTask(db, c)
	require.NoError(t, err)
	require.True(t, won)
	ok, err := models.FinishTask(db, name, c.Token, models.TaskRun{Instance: "test", Started: now, Done: now, Error: failure})
	require.NoError(t, err)
	require.True(t, ok)
}
