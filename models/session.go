package models

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
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
	// CSRFToken is the token this session's forms carry, derived from the
	// cookie value when the session is loaded (SessionUser) and never stored.
	CSRFToken string `gorm:"-"`
}

// csrfLabel separates the CSRF token from every other use of the cookie value.
const csrfLabel = "syncdesk session csrf token v1"

// csrfTokenFor derives a session's CSRF token from its cookie value: an
// HMAC keyed with the cookie, which only the signed-in browser and the server
// see. Every instance on the same database derives the same token without a
// shared key or a column; a new session (each sign-in) has a new one, and it
// dies with the session. It tells nothing of the cookie or of the stored id.
func csrfTokenFor(cookie string) string {
	m := hmac.New(sha256.New, []byte(cookie))
	m.Write([]byte(csrfLabel))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
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

// SessionUser returns the live session for a cookie value, with its CSRF
// token, and its enabled user. A session idle longer than idle, or past its
// absolute end, is deleted and reported as ErrNotFound.
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
	s.CSRFToken = csrfTokenFor(token)
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
