package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/schedule"
)

// Set is the configured sources, for the schedule, the page and its buttons.
type Set struct {
	db      *gorm.DB
	sources map[string]*Source
	names   []string
	clock   func() time.Time
}

// Open makes every configured source; nothing connects until a drain.
func Open(ctx context.Context, cfg config.Config, db *gorm.DB, eng *outbox.Engine, opts Options) (*Set, error) {
	set := &Set{db: db, sources: map[string]*Source{}, names: cfg.SourceNames()}
	for _, name := range set.names {
		s, err := New(ctx, name, cfg.Sources[name], db, eng, opts)
		if err != nil {
			_ = set.Close()
			return nil, err
		}
		set.sources[name] = s
		set.clock = s.opts.Clock.Now
	}
	return set, nil
}

// Tasks are the sources' rows in the task table.
func (set *Set) Tasks() []schedule.Task {
	var out []schedule.Task
	for _, name := range set.names {
		out = append(out, set.sources[name].Task())
	}
	return out
}

// Close closes every source's pool.
func (set *Set) Close() error {
	var errs []error
	for _, s := range set.sources {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// State is what the services page shows of a source.
type State struct {
	Name, Mode, Where string
	State             string // reading, paused or failing: decided by stateOf
	Cursor            string
	Lag               time.Duration // since the source last had nothing waiting; 0 before any read
	ReadAt            time.Time     // the last read that went well
	RowsRead          int64
	Refused, Skipped  int64
	Untimed           int64 // change query rows left out: their updated_at is empty
	LastRefusal       string
	LastSkip          string
	LastError         string
	PausedBy          string
	PausedAt          time.Time
	PauseReason       string
}

// The states of a source.
const (
	Reading = "reading"
	Paused  = "paused"
	Failing = "failing"
)

// stateOf is the one place a source's state is decided.
func stateOf(c models.SourceCursor) string {
	switch {
	case c.Paused():
		return Paused
	case c.Failing():
		return Failing
	}
	return Reading
}

// States returns every source's state, by name.
func (set *Set) States(ctx context.Context) ([]State, error) {
	if set == nil || len(set.names) == 0 {
		return nil, nil
	}
	rows, err := models.ListSourceCursors(set.db.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	byName := map[string]models.SourceCursor{}
	for _, r := range rows {
		byName[r.Source] = r
	}
	out := make([]State, 0, len(set.names))
	for _, name := range set.names {
		out = append(out, set.sources[name].state(byName[name], set.clock()))
	}
	return out, nil
}

func (s *Source) state(c models.SourceCursor, now time.Time) State {
	st := State{Name: s.name, Mode: "outbox table " + s.cfg.Table, Where: s.cfg.Where(), State: stateOf(c),
		RowsRead: c.RowsRead, Refused: c.Refused, Skipped: c.Skipped, Untimed: c.Untimed, LastRefusal: c.LastRefusal,
		LastSkip: c.LastSkip, LastError: c.LastError, PausedBy: c.PausedBy, PauseReason: c.PauseReason,
		Cursor: fmt.Sprintf("after id %d", c.LastID)}
	if !s.cfg.OutboxMode() {
		st.Mode = fmt.Sprintf("change query (%s records, re-read window %s)", s.cfg.Type, s.cfg.RereadWindow)
		st.Cursor = "from the start"
		if c.LastAt != nil {
			st.Cursor = fmt.Sprintf("after %s, id %d", c.LastAt.UTC().Format("2006-01-02 15:04:05.000000"), c.LastID)
		}
	}
	if c.CaughtUpAt != nil {
		st.Lag = max(0, now.Sub(*c.CaughtUpAt))
	}
	if c.ReadAt != nil {
		st.ReadAt = *c.ReadAt
	}
	if c.PausedAt != nil {
		st.PausedAt = *c.PausedAt
	}
	return st
}

// MaxReason bounds a pause's reason, in characters.
const MaxReason = 200

// Pause stops the reading of a source on every instance, from its next
// batch on; false when it was paused already.
func (set *Set) Pause(ctx context.Context, name, who, reason string) (bool, error) {
	s, err := set.source(name)
	if err != nil {
		return false, err
	}
	reason = strings.Join(strings.Fields(reason), " ")
	if utf8.RuneCountInString(reason) > MaxReason {
		return false, models.Invalid(fmt.Sprintf("Keep the reason under %d characters.", MaxReason))
	}
	done, err := models.PauseSource(set.db.WithContext(ctx), name, who, reason, s.opts.Clock.Now())
	if done {
		s.opts.Log.Info("source paused", "source", name, "by", who)
	}
	return done, err
}

// Resume lets a source be read again from its cursor; false when it was
// not paused.
func (set *Set) Resume(ctx context.Context, name, who string) (bool, error) {
	s, err := set.source(name)
	if err != nil {
		return false, err
	}
	done, err := models.ResumeSource(set.db.WithContext(ctx), name)
	if done {
		s.opts.Log.Info("source resumed", "source", name, "by", who)
	}
	return done, err
}

func (set *Set) source(name string) (*Source, error) {
	if set != nil {
		if s, ok := set.sources[name]; ok {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no source named %q is configured: %w", name, models.ErrNotFound)
}
