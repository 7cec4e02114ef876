package models_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// However many demotions and disablings race, one active admin is left:
// the check and the change are one transaction, and on Postgres they take
// turns on the admins' rows.
func TestTheLastActiveAdminSurvivesARace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		const admins = 8
		for i := range admins {
			_, err := models.CreateUser(db, fmt.Sprintf("admin%d@example.com", i), models.RoleAdmin, "correct horse battery", now)
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		refused, other := 0, []error{}
		for g := range 4 * admins {
			wg.Add(1)
			go func() {
				defer wg.Done()
				email := fmt.Sprintf("admin%d@example.com", g%admins)
				var err error
				if g%2 == 0 {
					_, err = models.SetRole(db, email, models.RoleOperator, now)
				} else {
					_, err = models.DisableUser(db, email, now)
				}
				mu.Lock()
				defer mu.Unlock()
				switch {
				case errors.Is(err, models.ErrLastAdmin):
					refused++
				case err != nil:
					other = append(other, err)
				}
			}()
		}
		wg.Wait()
		require.Empty(t, other)
		var left int64
		require.NoError(t, db.Model(&models.User{}).Where("role = ? AND disabled_at IS NULL", models.RoleAdmin).Count(&left).Error)
		require.EqualValues(t, 1, left, "one active admin is left")
		require.Positive(t, refused, "the changes that would have removed the last one were refused")
	})
}

// Passwords are stored as argon2id at OWASP's minimum (19 MiB, two passes,
// one lane; cheatsheetseries.owasp.org, Password Storage), with a salt of
// their own, and only the right password matches.
func TestPasswordsAreHashedWithArgon2idAtOWASPsMinimum(t *testing.T) {
	a, err := models.HashPassword("correct-horse-battery")
	require.NoError(t, err)
	b, err := models.HashPassword("correct-horse-battery")
	require.NoError(t, err)
	require.Regexp(t, `^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`, a)
	require.NotEqual(t, a, b, "each hash has a salt of its own")
	require.True(t, models.CheckPassword(a, "correct-horse-battery"))
	require.False(t, models.CheckPassword(a, "correct-horse-batterY"))
}
