package models

import (
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Role is what a user may do. Roles are ordered: each includes the ones below it.
type Role string

// The roles, from least to most.
const (
	RoleViewer   Role = "viewer"
	RoleOperator Role = "operator"
	RoleAdmin    Role = "admin"
)

// Roles lists every role, least first.
var Roles = []Role{RoleViewer, RoleOperator, RoleAdmin}

func (r Role) rank() int {
	for i, x := range Roles {
		if x == r {
			return i + 1
		}
	}
	return 0
}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r.rank() > 0 }

// AtLeast reports whether r includes min.
func (r Role) AtLeast(min Role) bool { return r.Valid() && r.rank() >= min.rank() }

// ParseRole returns the role named s, or an InvalidError.
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	if !r.Valid() {
		return "", Invalid(fmt.Sprintf("role %q is not one of viewer, operator, admin", s))
	}
	return r, nil
}

// User is a person who signs in to the dashboard.
type User struct {
	ID           int64
	Email        string
	Name         string
	Role         Role
	PasswordHash string
	DisabledAt   *time.Time
	LastSignInAt *time.Time // nil: never signed in since syncdesk kept it
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Disabled reports whether the account may no longer sign in.
func (u *User) Disabled() bool { return u.DisabledAt != nil }

// NormalizeEmail trims and lower-cases an address and checks its shape.
func NormalizeEmail(s string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(s))
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || a.Name != "" {
		return "", Invalid(fmt.Sprintf("%q is not an email address", s))
	}
	return e, nil
}

// CreateUser inserts a user with a hashed password. A taken email is ErrConflict.
func CreateUser(db *gorm.DB, email string, role Role, password string, now time.Time) (*User, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	if !role.Valid() {
		return nil, Invalid(fmt.Sprintf("role %q is not one of viewer, operator, admin", role))
	}
	if len(password) < 12 {
		return nil, Invalid("the password must have at least 12 characters")
	}
	hash, err := HashPassword(password)
	if err != nil {
		return nil, err
	}
	u := &User{Email: email, Name: strings.SplitN(email, "@", 2)[0], Role: role, PasswordHash: hash, CreatedAt: now, UpdatedAt: now}
	// The unique index on email decides a race between two creators.
	res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(u)
	if res.Error != nil {
		return nil, fmt.Errorf("create user: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return nil, fmt.Errorf("user %s: %w", email, ErrConflict)
	}
	return u, nil
}

// UserByEmail finds a user by email (case-insensitive).
func UserByEmail(db *gorm.DB, email string) (*User, error) {
	var u User
	err := db.Where("email = ?", strings.ToLower(strings.TrimSpace(email))).Take(&u).Error
	return &u, notFound(err, "user "+email)
}

// UserByID finds a user by id.
func UserByID(db *gorm.DB, id int64) (*User, error) {
	var u User
	err := db.Take(&u, id).Error
	return &u, notFound(err, fmt.Sprintf("user %d", id))
}

// ListUsers returns every user, by email.
func ListUsers(db *gorm.DB) ([]User, error) {
	var us []User
	return us, db.Order("email").Find(&us).Error
}

// CountUsers returns how many users exist.
func CountUsers(db *gorm.DB) (int64, error) {
	var n int64
	return n, db.Model(&User{}).Count(&n).Error
}

// DisableUser stops a user from signing in and ends every session they hold,
// in one transaction.
func DisableUser(db *gorm.DB, email string, now time.Time) (*User, error) {
	var u *User
	err := db.Transaction(func(tx *gorm.DB) error {
		var err error
		if u, err = adminGuarded(tx, email); err != nil {
			return err
		}
		if u.DisabledAt == nil {
			u.DisabledAt = &now
			u.UpdatedAt = now
			if err := tx.Model(u).Select("disabled_at", "updated_at").Updates(u).Error; err != nil {
				return err
			}
		}
		return tx.Where("user_id = ?", u.ID).Delete(&Session{}).Error
	})
	return u, err
}

// EnableUser lets a disabled user sign in again, with their old password
// and role, and reports whether they were disabled.
func EnableUser(db *gorm.DB, email string, now time.Time) (*User, bool, error) {
	u, err := UserByEmail(db, email)
	if err != nil {
		return nil, false, err
	}
	res := db.Model(&User{}).Where("id = ? AND disabled_at IS NOT NULL", u.ID).
		Updates(map[string]any{"disabled_at": nil, "updated_at": now})
	if res.Error != nil {
		return nil, false, fmt.Errorf("enable user %s: %w", u.Email, res.Error)
	}
	u.DisabledAt = nil
	return u, res.RowsAffected == 1, nil
}

// RecordSignIn stamps a user's last sign-in.
func RecordSignIn(db *gorm.DB, id int64, now time.Time) error {
	return db.Model(&User{}).Where("id = ?", id).Update("last_sign_in_at", now.UTC()).Error
}

// notFound turns gorm's record-not-found into ErrNotFound with what was missing.
func notFound(err error, what string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return err
}

// SetRole changes a user's role.
func SetRole(db *gorm.DB, email string, role Role, now time.Time) (*User, error) {
	if !role.Valid() {
		return nil, Invalid(fmt.Sprintf("role %q is not one of viewer, operator, admin", role))
	}
	var u *User
	err := db.Transaction(func(tx *gorm.DB) error {
		var err error
		if role == RoleAdmin {
			u, err = UserByEmail(tx, email)
		} else {
			u, err = adminGuarded(tx, email)
		}
		if err != nil {
			return err
		}
		u.Role, u.UpdatedAt = role, now
		return tx.Model(u).Select("role", "updated_at").Updates(u).Error
	})
	return u, err
}

// ErrLastAdmin refuses to demote or disable the only active admin: nobody
// could manage users any more.
var ErrLastAdmin = errors.New("the only active admin")

// adminChangesKey is the Postgres advisory lock that changes of who is an
// active admin take turns on (migrations use 7265_1001).
const adminChangesKey = 7265_1002

// adminGuarded reads the user whom a change is about to take the admin
// role from (by demoting or disabling them), and refuses with ErrLastAdmin
// when no other active admin would be left. On Postgres the transaction
// first takes an advisory lock: two admins demoting each other at the same
// instant then take turns, and the second, reading after the first has
// committed, sees that the first is gone. (SQLite's write transactions take
// turns anyway.)
func adminGuarded(tx *gorm.DB, email string) (*User, error) {
	if Dialect(tx) == Postgres {
		if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", adminChangesKey).Error; err != nil {
			return nil, fmt.Errorf("wait for other changes of admins: %w", err)
		}
	}
	u, err := UserByEmail(tx, email)
	if err != nil || u.Role != RoleAdmin || u.Disabled() {
		return u, err
	}
	var others int64
	err = tx.Model(&User{}).Where("role = ? AND disabled_at IS NULL AND id <> ?", RoleAdmin, u.ID).Count(&others).Error
	if err != nil {
		return nil, fmt.Errorf("count the other active admins: %w", err)
	}
	if others == 0 {
		return nil, fmt.Errorf("%s is %w", u.Email, ErrLastAdmin)
	}
	return u, nil
}

// ResetPassword gives a user a new password and ends every session they
// hold, in one transaction: whoever had the old one is signed out.
func ResetPassword(db *gorm.DB, email, password string, now time.Time) (*User, error) {
	if len(password) < 12 {
		return nil, Invalid("the password must have at least 12 characters")
	}
	hash, err := HashPassword(password)
	if err != nil {
		return nil, err
	}
	var u *User
	err = db.Transaction(func(tx *gorm.DB) error {
		var err error
		if u, err = UserByEmail(tx, email); err != nil {
			return err
		}
		u.PasswordHash, u.UpdatedAt = hash, now
		if err := tx.Model(u).Select("password_hash", "updated_at").Updates(u).Error; err != nil {
			return err
		}
		return tx.Where("user_id = ?", u.ID).Delete(&Session{}).Error
	})
	return u, err
}
