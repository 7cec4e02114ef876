package models

import (
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// APIToken lets the business application call the JSON API. Only its hash is stored.
type APIToken struct {
	ID         int64
	Name       string
	TokenHash  string
	CreatedBy  string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// tokenPrefix marks syncdesk tokens so that secret scanners and people can tell them apart.
const tokenPrefix = "sdk_"

// CreateAPIToken stores a new token under name and returns the token itself,
// which is shown once and never stored.
func CreateAPIToken(db *gorm.DB, name, createdBy string, now time.Time) (string, *APIToken, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return "", nil, Invalid("a token needs a name of 1 to 100 characters")
	}
	token := tokenPrefix + NewSecret(32)
	t := &APIToken{Name: name, TokenHash: HashToken(token), CreatedBy: createdBy, CreatedAt: now}
	res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(t)
	if res.Error != nil {
		return "", nil, fmt.Errorf("create token: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return "", nil, fmt.Errorf("token %q: %w", name, ErrConflict)
	}
	return token, t, nil
}

// APITokenBySecret finds the live (not revoked) token for a presented secret.
func APITokenBySecret(db *gorm.DB, token string) (*APIToken, error) {
	var t APIToken
	err := db.Where("token_hash = ? AND revoked_at IS NULL", HashToken(token)).Take(&t).Error
	return &t, notFound(err, "token")
}

// TouchAPIToken records that a token was used.
func TouchAPIToken(db *gorm.DB, id int64, now time.Time) error {
	return db.Model(&APIToken{}).Where("id = ?", id).Update("last_used_at", now).Error
}

// RevokeAPIToken stops a token from working.
func RevokeAPIToken(db *gorm.DB, name string, now time.Time) error {
	res := db.Model(&APIToken{}).Where("name = ? AND revoked_at IS NULL", name).Update("revoked_at", now)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("live token %q: %w", name, ErrNotFound)
	}
	return nil
}

// ListAPITokens returns every token, newest first.
func ListAPITokens(db *gorm.DB) ([]APIToken, error) {
	var ts []APIToken
	return ts, db.Order("created_at DESC, id DESC").Find(&ts).Error
}
