package alerts

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/notify"
)

// Backoff of a failed send: doubling from backoffBase, at most backoffCap,
// each wait between half and all of that (jitter), so that a receiver that
// comes back is not met by every retry at once.
const (
	backoffBase = 10 * time.Second
	backoffCap  = 10 * time.Minute
)

// retryAfterCap bounds the wait a receiver's Retry-After asks for: one
// that asks for a day still hears of an incident within the hour, as the
// default repeat would tell it again.
const retryAfterCap = time.Hour

// retryWait is how long to wait after the tries-th failed try: the
// backoff, or longer when the receiver asked for longer (a 429 or 503 with
// Retry-After), up to retryAfterCap. Trying sooner would only be refused
// again and spend a try.
func retryWait(tries int, r float64, asked time.Duration) time.Duration {
	return max(backoff(tries, r), min(asked, retryAfterCap))
}

// backoff is how long to wait after the tries-th failed try; r in [0, 1).
func backoff(tries int, r float64) time.Duration {
	d := backoffCap
	if tries < 20 {
		d = min(backoffCap, time.Duration(float64(backoffBase)*math.Pow(2, float64(tries-1))))
	}
	return d/2 + time.Duration(r*float64(d/2))
}

// Deliver sends the notifications that are due, each claimed for this
// instance so that no other sends it meanwhile, a few at a time, and
// writes how each went. Each send has its own time limit: a receiver
// that hangs costs one try, not the delivery.
func (a *Alerts) Deliver(ctx context.Context) error {
	// A repeat a newer notification replaces is not sent: a channel back
	// after an hour down gets where the incident stands, not a burst.
	if err := models.SupersedeNotifications(a.db.WithContext(ctx), string(notify.Repeated)); err != nil {
		return err
	}
	// A full batch may have more behind it: a few more rounds, bounded so
	// that the task's run ends.
	for range 10 {
		n, err := a.deliverBatch(ctx)
		if err != nil || n < a.batch {
			return err
		}
	}
	return nil
}

// deliverBatch claims and sends one batch, and says how many it claimed.
func (a *Alerts) deliverBatch(ctx context.Context) (int, error) {
	db := a.db.WithContext(ctx)
	claimed, err := models.ClaimNotifications(db, a.owner, a.clock.Now(), a.lease, a.batch)
	if err != nil || len(claimed) == 0 {
		return 0, err
	}
	ids := make([]int64, len(claimed))
	for i, n := range claimed {
		ids[i] = n.IncidentID
	}
	incidents, err := models.IncidentsByID(db, ids)
	if err != nil {
		return len(claimed), err
	}
	errs := make([]error, len(claimed))
	var wg sync.WaitGroup
	for i, n := range claimed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = a.deliverOne(ctx, n, incidents[n.IncidentID])
		}()
	}
	wg.Wait()
	return len(claimed), errors.Join(errs...)
}

// deliverOne sends one claimed notification and writes the outcome.
func (a *Alerts) deliverOne(ctx context.Context, n models.IncidentNotification, inc models.Incident) error {
	err := a.send(ctx, n, inc)
	now := a.clock.Now()
	o := models.NotificationOutcome{Status: models.NotificationSent, At: now}
	if err != nil {
		o.Error = a.words(err)
		switch {
		case errors.Is(err, notify.ErrPermanent) || n.Tries >= a.maxTries:
			o.Status = models.NotificationGaveUp
			a.log.Warn("alert notification given up", "channel", n.Channel, "incident", n.IncidentID, "tries", n.Tries, "err", o.Error)
		default:
			o.Status, o.Next = models.NotificationPending, now.Add(retryWait(n.Tries, a.jitter(), notify.RetryAfter(err)))
			a.log.Info("alert notification to retry", "channel", n.Channel, "incident", n.IncidentID, "tries", n.Tries, "at", o.Next, "err", o.Error)
		}
	}
	// Written even when ctx ends (a stop): the outcome of a send that
	// happened must not be lost to a retry that sends it twice.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, ferr := models.FinishNotification(a.db.WithContext(wctx), n.ID, a.owner, o)
	return ferr
}

func (a *Alerts) send(ctx context.Context, n models.IncidentNotification, inc models.Incident) error {
	ch, ok := a.channels[n.Channel]
	if !ok {
		return fmt.Errorf("no channel named %s is configured any more: %w", n.Channel, notify.ErrPermanent)
	}
	m := notify.Message{ID: fmt.Sprintf("syncdesk-notification-%d", n.ID), Incident: inc.ID, Rule: inc.Rule, Subject: inc.Subject,
		State: notify.State(n.State), Title: n.Title, Text: n.Text, URL: a.link(inc.URL), At: n.DecidedAt}
	limit := a.sendTimeout
	if c, ok := a.cfg.Channels[n.Channel]; ok {
		limit = c.SendTimeout()
	}
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := ch.Send(sctx, m)
	if err != nil && sctx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("the channel did not answer within %s: %w", limit, err)
	}
	return err
}

// words is a failed send as the page shows it: no URL's path or query (a
// Slack webhook's address is its secret), no channel secret, one line.
func (a *Alerts) words(err error) string {
	s := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			s = strings.ReplaceAll(s, ue.URL, u.Scheme+"://"+u.Host)
		}
	}
	return a.redactor.Excerpt(a.redactor.Text(s), 300)
}
