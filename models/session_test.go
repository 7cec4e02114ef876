package models_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// A session's CSRF token is the same at every load (every instance derives
// it alike), differs from session to session, and is neither the cookie nor
// the stored id.
func TestSessionCSRFTokenIsBoundToTheSession(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		u, err := models.CreateUser(db, "ana@example.com", models.RoleViewer, "correct-horse-battery", now)
		require.NoError(t, err)
		load := func(cookie string) *models.Session {
			t.Helper()
			s, _, err := models.SessionUser(db, cookie, now, time.Hour)
			require.NoError(t, err)
			require.NotEmpty(t, s.CSRFToken)
			return s
		}
		first, err := models.CreateSession(db, u.ID, "198.51.100.7", "test", now, time.Hour)
		require.NoError(t, err)
		second, err := models.CreateSession(db, u.ID, "198.51.100.7", "test", now, time.Hour)
		require.NoError(t, err)

		a := load(first)
		require.Equal(t, a.CSRFToken, load(first).CSRFToken, "the token changed between two loads of one session")
		require.NotEqual(t, a.CSRFToken, load(second).CSRFToken, "two sessions share a token")
		require.NotEqual(t, first, a.CSRFToken)
		require.NotEqual(t, a.ID, a.CSRFToken)

		require.NoError(t, models.DeleteSession(db, first))
		_, _, err = models.SessionUser(db, first, now, time.Hour)
		require.ErrorIs(t, err, models.ErrNotFound, "a signed-out session has no token to give")
	})
}
