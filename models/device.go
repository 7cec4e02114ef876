package models

import (
	"fmt"
	"time"

	"gorm.io/gorm"
)

// KnownDevice is a browser that has signed in to an account: OWASP's
// "device cookie". Its ID is the SHA-256 of the cookie value, which is
// never stored.
type KnownDevice struct {
	ID        string
	UserID    int64
	CreatedAt time.Time
	ExpiresAt time.Time
}

// maxDevicesPerUser bounds the rows one account keeps: a browser that signs
// in from many profiles (or clears its cookies) does not grow the table.
const maxDevicesPerUser = 20

// IsKnownDevice reports whether a device cookie value belongs to a browser
// that signed in to the account with this email and has not expired.
func IsKnownDevice(db *gorm.DB, token, email string, now time.Time) (bool, error) {
	if token == "" {
		return false, nil
	}
	var n int64
	err := db.Model(&KnownDevice{}).Joins("JOIN users u ON u.id = known_devices.user_id").
		Where("known_devices.id = ? AND u.email = ? AND known_devices.expires_at > ?", HashToken(token), email, now).
		Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("read known device: %w", err)
	}
	return n > 0, nil
}

// RememberDevice records a successful sign-in from a browser. A browser that
// already holds a live device cookie for the user keeps it, for another
// lifetime from now, and gets "" back; any other gets a new cookie value.
// The user's expired devices and those beyond the maxDevicesPerUser that live longest
// are deleted in the same transaction.
func RememberDevice(db *gorm.DB, token string, userID int64, now time.Time, lifetime time.Duration) (string, error) {
	fresh := ""
	err := db.Transaction(func(tx *gorm.DB) error {
		if token != "" {
			res := tx.Model(&KnownDevice{}).Where("id = ? AND user_id = ? AND expires_at > ?", HashToken(token), userID, now).
				Update("expires_at", now.Add(lifetime))
			if res.Error != nil {
				return fmt.Errorf("renew known device: %w", res.Error)
			}
			if res.RowsAffected > 0 {
				return nil
			}
		}
		fresh = NewSecret(32)
		d := KnownDevice{ID: HashToken(fresh), UserID: userID, CreatedAt: now, ExpiresAt: now.Add(lifetime)}
		if err := tx.Create(&d).Error; err != nil {
			return fmt.Errorf("remember device: %w", err)
		}
		newest := tx.Model(&KnownDevice{}).Select("id").Where("user_id = ?", userID).Order("expires_at DESC").Limit(maxDevicesPerUser)
		err := tx.Where("user_id = ? AND (expires_at <= ? OR id NOT IN (?))", userID, now, newest).Delete(&KnownDevice{}).Error
		if err != nil {
			return fmt.Errorf("forget old devices: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return fresh, nil
}
