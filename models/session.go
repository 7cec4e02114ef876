package models

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Session is a signed-in browser. Its ID is the SHA-256 of the cookie value.
type Session struct {
	ID         string
	UserID     int64
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time // the absolute end, whatever the activity
	IP         string
	UserAgent  string
}

// HashToken returns the hex SHA-256 under which a session or API token is stored.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CreateSession starts a session for a user and returns the cookie value,
// which is never stored.
func CreateSession(db *gorm.DB, userID int64, ip, userAgent string, now time.Time, absolute time.Duration) (string, error) {
	token := NewSecret(32)
	if len(userAgent) > 200 {
		userAgent = userAgent[:200]
	}
	s := Session{ID: HashToken(token), UserID: userID, CreatedAt: now, LastSeenAt: now,
		ExpiresAt: now.Add(absolute), IP: ip, UserAgent: userAgent}
	if err := db.Create(&s).Error; err != nil {
		return "", fmt.Errorf("create session: %w", err)
	}
	return token, nil
}

// SessionUser returns the live session for a cookie value and its enabled
// user. A session idle longer than idle, or past its absolute end, is deleted
// and reported as ErrNotFound.
func SessionUser(db *gorm.DB, token string, now time.Time, idle time.Duration) (*Session, *User, error) {
	var s Session
	if err := db.Take(&s, "id = ?", HashToken(token)).Error; err != nil {
		return nil, nil, notFound(err, "session")
	}
	if !now.Before(s.ExpiresAt) || now.Sub(s.LastSeenAt) >= idle {
		db.Delete(&s)
		return nil, nil, fmt.Errorf("session expired: %w", ErrNotFound)
	}
	u, err := UserByID(db, s.UserID)
	if err != nil {
		return nil, nil, err
	}
	if u.Disabled() {
		return nil, nil, fmt.Errorf("user disabled: %w", ErrNotFound)
	}
	return &s, u, nil
}

// TouchSession records activity on a session. Callers throttle it (once a
// minute is plenty) so that reading pages does not write on every request.
func TouchSession(db *gorm.DB, id string, now time.Time) error {
	return db.Model(&Session{}).Where("id = ?", id).Update("last_seen_at", now).Error
}

// DeleteSession ends a session by its cookie value.
func DeleteSession(db *gorm.DB, token string) error {
	return db.Where("id = ?", HashToken(token)).Delete(&Session{}).Error
}

// PruneSessions deletes sessions past their absolute end or idle for longer
// than idle, and returns how many it deleted.
func PruneSessions(db *gorm.DB, now time.Time, idle time.Duration) (int64, error) {
	res := db.Where("expires_at <= ? OR last_seen_at <= ?", now, now.Add(-idle)).Delete(&Session{})
	return res.RowsAffected, res.Error
}
