package web

import (
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/models/discrepancy"
)

// buttonSlack is how long after a round's first attempt a person's button
// may still be what began it: the handler writes its audit entry after
// asking for the sync, and the engine can send in between.
const buttonSlack = 2 * time.Second

// roundsRead bounds the rounds whose webhooks are looked for, newest
// first: each costs one query, and the older rounds are seldom asked about.
const roundsRead = 20

// webhookReach is how long before a round a webhook is looked for: a
// webhook's push is sent at once, unless sending was paused or behind.
const webhookReach = time.Hour

// roundTrace is something outside the attempt log that makes a link send
// again: a person's button, a reconciliation's fix, a webhook.
type roundTrace struct {
	at   time.Time
	why  func(prev models.Attempt) string
	late time.Duration // how long after the round's first attempt it may be written
}

// roundCauses says, for each attempt (oldest first) that begins a round
// after another, why it began, from the traces the link's history leaves
// in the audit log, the reconciliation runs and the webhook events, and
// from the record's last change (rec, nil when there is none).
func (s *Server) roundCauses(c echo.Context, l *models.Link, rec *models.Record, attempts []models.Attempt) (map[int]string, error) {
	var starts []int
	for i := 1; i < len(attempts); i++ {
		if attempts[i].Number != attempts[i-1].Number+1 {
			starts = append(starts, i)
		}
	}
	if len(starts) == 0 {
		return nil, nil
	}
	traces, err := s.linkTraces(c, l, attempts, starts)
	if err != nil {
		return nil, err
	}
	traces = append(traces, recordTraces(rec)...)
	out := map[int]string{}
	for _, i := range starts {
		out[i] = roundWhy(attempts[i-1], attempts[i], traces)
	}
	return out, nil
}

// linkTraces reads the buttons and fixes over the span of the history, and
// the webhooks naming the link's object before each of the newest rounds
// that follow a success.
func (s *Server) linkTraces(c echo.Context, l *models.Link, attempts []models.Attempt, starts []int) ([]roundTrace, error) {
	db := s.requestDB(c)
	from, to := attempts[0].CreatedAt, attempts[len(attempts)-1].CreatedAt.Add(buttonSlack)
	entries, err := models.LinkButtonEntries(db, l.ID, from, to)
	if err != nil {
		return nil, fmt.Errorf("audit entries of link %d: %w", l.ID, err)
	}
	var traces []roundTrace
	for _, e := range entries {
		traces = append(traces, roundTrace{at: e.At, why: buttonWhy(e), late: buttonSlack})
	}
	fixes, err := models.LinkFixes(db, l.ID, l.ExternalService, from, to)
	if err != nil {
		return nil, fmt.Errorf("reconciliation fixes of link %d: %w", l.ID, err)
	}
	for _, f := range fixes {
		traces = append(traces, roundTrace{at: f.StartedAt, why: fixWhy(f)})
	}
	events, err := models.LinkEvents(db, l.ID, from.Add(-webhookReach), to)
	if err != nil {
		return nil, fmt.Errorf("webhooks about link %d: %w", l.ID, err)
	}
	for n, k := 0, len(starts)-1; k >= 0 && n < roundsRead && len(events) > 0; k-- {
		prev, first := attempts[starts[k]-1], attempts[starts[k]]
		if prev.Outcome != models.OutcomeOK {
			continue // the object had not changed hands: no webhook pushes a failed link
		}
		n++
		since := later(prev.CreatedAt, first.CreatedAt.Add(-webhookReach))
		for _, ev := range events {
			if ev.ReceivedAt.Before(since) || ev.ReceivedAt.After(first.CreatedAt) {
				continue
			}
			traces = append(traces, roundTrace{at: ev.ReceivedAt, why: func(models.Attempt) string {
				return "pushed again after webhook " + ev.EventType + " (" + ev.EventID + ")"
			}})
		}
	}
	return traces, nil
}

// recordTraces is the record's last change, or its deletion. A change
// after a failure starts a round of its own (the new version is sent with
// fresh attempts), which nothing else traces: no button, fix or webhook
// about this link. Only the last change is kept, so only the round it
// began can be told apart from a retry of the same data.
func recordTraces(rec *models.Record) []roundTrace {
	if rec == nil {
		return nil
	}
	if rec.DeletedAt != nil { // its last change
		return []roundTrace{{at: *rec.DeletedAt, why: func(models.Attempt) string { return "the record was deleted" }}}
	}
	return []roundTrace{{at: rec.UpdatedAt, why: func(models.Attempt) string { return "the record changed" }}}
}

// roundWhy is the last trace between the attempt before the round and the
// round's first, in words; without one, a round after a success is the
// record's new content, and one after a failure a retry.
func roundWhy(prev, first models.Attempt, traces []roundTrace) string {
	var last *roundTrace
	for i, t := range traces {
		if t.at.After(prev.CreatedAt) && !t.at.After(first.CreatedAt.Add(t.late)) && (last == nil || t.at.After(last.at)) {
			last = &traces[i]
		}
	}
	switch {
	case last != nil:
		return last.why(prev)
	case prev.Outcome == models.OutcomeOK:
		return "the record changed"
	}
	return "retried"
}

func buttonWhy(e models.AuditEntry) func(models.Attempt) string {
	return func(prev models.Attempt) string {
		switch {
		case e.Action == action.LinkRecreate:
			return "re-created by " + e.Actor
		case e.Action == action.LinkSync && prev.Outcome == models.OutcomeOK:
			return "Sync now by " + e.Actor
		}
		return "retried by " + e.Actor
	}
}

func fixWhy(f models.LinkFix) func(models.Attempt) string {
	return func(models.Attempt) string {
		switch f.Kind {
		case discrepancy.MissingRemote:
			return fmt.Sprintf("re-created by reconciliation run %d: the object was missing", f.RunID)
		case discrepancy.FieldMismatch:
			return fmt.Sprintf("pushed again by reconciliation run %d: the object differed", f.RunID)
		}
		return fmt.Sprintf("fixed by reconciliation run %d", f.RunID)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
