package models

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// SourceCursor is where syncdesk has read a source to, and how reading it
// goes (README "Sources").
type SourceCursor struct {
	Source      string `gorm:"primaryKey"`
	Version     int64  // bumped by every advance: the compare-and-set
	LastID      int64
	LastAt      *time.Time // change query mode only
	RowsRead    int64
	Refused     int64
	LastRefusal string
	Skipped     int64
	LastSkip    string
	ReadAt      *time.Time
	CaughtUpAt  *time.Time
	LastError   string
	FailedAt    *time.Time
	PausedBy    string
	PausedAt    *time.Time
	PauseReason string
	// ReadMode and ReadFrom are what the cursor was made for: "table" and
	// the outbox table's name, or "query" and the change query's text;
	// empty until a start gives them (rows made before they existed).
	ReadMode string
	ReadFrom string
	// ReadBy is what the cursor counts by: the outbox table's id column,
	// or the type of the change query's records; empty until a start gives
	// it (rows made before it existed).
	ReadBy string
	// Untimed is how many of a change query's rows have an empty
	// updated_at, and so are not read, as last counted.
	Untimed int64
}

// TableName is the source_cursors table.
func (SourceCursor) TableName() string { return "source_cursors" }

// ErrCursorMoved means another instance advanced a source's cursor since it
// was read here: this instance's batch must not commit.
var ErrCursorMoved = errors.New("the source's cursor was advanced by another instance meanwhile")

// Paused reports whether a person paused the source.
func (c SourceCursor) Paused() bool { return c.PausedBy != "" }

// Failing reports whether the last try to read failed after the last read
// that went well.
func (c SourceCursor) Failing() bool {
	return c.FailedAt != nil && (c.ReadAt == nil || c.FailedAt.After(*c.ReadAt))
}

// Moved reports whether the cursor has passed any row: a cursor that has
// not may read another table or query without skipping a row of it.
func (c SourceCursor) Moved() bool { return c.LastID != 0 || c.LastAt != nil }

// SourceIdentity is what a source's cursor is made for (SourceCursor's
// ReadMode, ReadFrom and ReadBy).
type SourceIdentity struct{ Mode, From, By string }

// Identity is what the cursor was made for.
func (c SourceCursor) Identity() SourceIdentity {
	return SourceIdentity{Mode: c.ReadMode, From: c.ReadFrom, By: c.ReadBy}
}

// SetSourceIdentity records what a source's cursor is made for, if it is
// still at version; false when another instance moved it meanwhile. The
// version is bumped, so that a batch read under the identity before
// cannot commit after it (AdvanceSourceCursor's compare-and-set).
func SetSourceIdentity(db *gorm.DB, source string, version int64, id SourceIdentity) (bool, error) {
	res := db.Model(&SourceCursor{}).Where("source = ? AND version = ?", source, version).
		Updates(map[string]any{"version": version + 1, "read_mode": id.Mode, "read_from": id.From, "read_by": id.By})
	if res.Error != nil {
		return false, fmt.Errorf("record what the cursor of source %s reads: %w", source, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// EnsureSourceCursor gives a source its row, at the start of its data;
// a row already there is kept.
func EnsureSourceCursor(db *gorm.DB, source string) error {
	err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&SourceCursor{Source: source}).Error
	if err != nil {
		return fmt.Errorf("make the cursor of source %s: %w", source, err)
	}
	return nil
}

// GetSourceCursor reads a source's row; ErrNotFound when it has none.
func GetSourceCursor(db *gorm.DB, source string) (SourceCursor, error) {
	var c SourceCursor
	err := db.Where("source = ?", source).Take(&c).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return c, fmt.Errorf("source %s: %w", source, ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("read the cursor of source %s: %w", source, err)
	}
	return c, nil
}

// ListSourceCursors reads every source's row, by name.
func ListSourceCursors(db *gorm.DB) ([]SourceCursor, error) {
	var out []SourceCursor
	if err := db.Order("source").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list source cursors: %w", err)
	}
	return out, nil
}

// CursorAdvance is one batch's move of a source's cursor.
type CursorAdvance struct {
	Source   string
	Version  int64 // the version read before the batch
	LastID   int64
	LastAt   *time.Time
	Read     int64 // rows read in the batch
	Skipped  int64 // outbox ids given up on
	SkipNote string
	Now      time.Time
	CaughtUp bool // the read found nothing more waiting
}

// AdvanceSourceCursor moves the cursor, in the transaction that stored the
// batch's records. The version in WHERE is the compare-and-set: of two
// instances that read the same cursor, the second's UPDATE matches nothing
// (on Postgres it waits for the first's row lock, then re-checks) and it
// gets ErrCursorMoved, which rolls its whole batch back.
func AdvanceSourceCursor(tx *gorm.DB, a CursorAdvance) error {
	now := a.Now.UTC()
	set := map[string]any{"version": a.Version + 1, "last_id": a.LastID, "last_at": utcPtr(a.LastAt),
		"rows_read": gorm.Expr("rows_read + ?", a.Read), "read_at": now}
	if a.CaughtUp {
		set["caught_up_at"] = now
	}
	if a.Skipped > 0 {
		set["skipped"] = gorm.Expr("skipped + ?", a.Skipped)
		set["last_skip"] = a.SkipNote
	}
	res := tx.Model(&SourceCursor{}).Where("source = ? AND version = ?", a.Source, a.Version).Updates(set)
	if res.Error != nil {
		return fmt.Errorf("advance the cursor of source %s: %w", a.Source, res.Error)
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("source %s: %w", a.Source, ErrCursorMoved)
	}
	return nil
}

// SourceCaughtUp records a read that found nothing new (the cursor stays).
func SourceCaughtUp(db *gorm.DB, source string, now time.Time) error {
	now = now.UTC()
	err := db.Model(&SourceCursor{}).Where("source = ?", source).
		Updates(map[string]any{"read_at": now, "caught_up_at": now}).Error
	if err != nil {
		return fmt.Errorf("record a read of source %s: %w", source, err)
	}
	return nil
}

// SourceRefused counts rows of a source the engine would not take, with the
// last one's reason in words. It is written after the batch committed: a
// crash in between loses the count, never a row.
func SourceRefused(db *gorm.DB, source string, n int64, last string) error {
	err := db.Model(&SourceCursor{}).Where("source = ?", source).
		Updates(map[string]any{"refused": gorm.Expr("refused + ?", n), "last_refusal": last}).Error
	if err != nil {
		return fmt.Errorf("count refused rows of source %s: %w", source, err)
	}
	return nil
}

// SetSourceUntimed records how many of a change query's rows have an
// empty updated_at, and reports whether that changed the count: only the
// instance that changed it says so in the log.
func SetSourceUntimed(db *gorm.DB, source string, n int64) (bool, error) {
	res := db.Model(&SourceCursor{}).Where("source = ? AND untimed <> ?", source, n).Update("untimed", n)
	if res.Error != nil {
		return false, fmt.Errorf("count the rows of source %s without updated_at: %w", source, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// SourceFailed records why reading a source failed.
func SourceFailed(db *gorm.DB, source, why string, now time.Time) error {
	err := db.Model(&SourceCursor{}).Where("source = ?", source).
		Updates(map[string]any{"last_error": why, "failed_at": now.UTC()}).Error
	if err != nil {
		return fmt.Errorf("record a failure of source %s: %w", source, err)
	}
	return nil
}

// PauseSource stops the reading of a source on every instance, and reports
// whether it was running; a source already paused keeps its first pause.
func PauseSource(db *gorm.DB, source, who, reason string, now time.Time) (bool, error) {
	res := db.Model(&SourceCursor{}).Where("source = ? AND paused_by = ''", source).
		Updates(map[string]any{"paused_by": who, "paused_at": now.UTC(), "pause_reason": reason})
	if res.Error != nil {
		return false, fmt.Errorf("pause source %s: %w", source, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// ResumeSource lets a source be read again, from its cursor, and reports
// whether it was paused.
func ResumeSource(db *gorm.DB, source string) (bool, error) {
	res := db.Model(&SourceCursor{}).Where("source = ? AND paused_by <> ''", source).
		Updates(map[string]any{"paused_by": "", "paused_at": nil, "pause_reason": ""})
	if res.Error != nil {
		return false, fmt.Errorf("resume source %s: %w", source, res.Error)
	}
	return res.RowsAffected == 1, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
