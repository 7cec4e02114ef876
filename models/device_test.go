package models_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// A device cookie is known only for the account it signed in to and only
// until it expires; a sign-in from a known browser renews it instead of
// adding a row, and an account keeps at most the twenty that live longest.
func TestKnownDevicesAreTiedToTheirAccount(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		ana, err := models.CreateUser(db, "ana@example.com", models.RoleViewer, "correct horse battery", now)
		require.NoError(t, err)
		_, err = models.CreateUser(db, "bo@example.com", models.RoleViewer, "correct horse battery", now)
		require.NoError(t, err)

		token, err := models.RememberDevice(db, "", ana.ID, now, time.Hour)
		require.NoError(t, err)
		require.NotEmpty(t, token)
		known := func(token, email string, at time.Time) bool {
			ok, err := models.IsKnownDevice(db, token, email, at)
			require.NoError(t, err)
			return ok
		}
		require.True(t, known(token, "ana@example.com", now))
		require.False(t, known(token, "bo@example.com", now), "ana's browser is not known to bo's account")
		require.False(t, known("", "ana@example.com", now))
		require.False(t, known("made-up", "ana@example.com", now))

		again, err := models.RememberDevice(db, token, ana.ID, now.Add(50*time.Minute), time.Hour)
		require.NoError(t, err)
		require.Empty(t, again, "a known browser keeps its cookie")
		require.True(t, known(token, "ana@example.com", now.Add(100*time.Minute)), "renewed for another lifetime")
		require.False(t, known(token, "ana@example.com", now.Add(111*time.Minute)), "expired")

		for i := range 30 { // thirty browsers more, each to live longer than the first
			_, err := models.RememberDevice(db, "", ana.ID, now.Add(51*time.Minute+time.Duration(i)*time.Second), 2*time.Hour)
			require.NoError(t, err)
		}
		var rows int64
		require.NoError(t, db.Model(&models.KnownDevice{}).Where("user_id = ?", ana.ID).Count(&rows).Error)
		require.EqualValues(t, 20, rows)
		require.False(t, known(token, "ana@example.com", now.Add(time.Hour)), "the devices beyond the twenty that live longest are forgotten")
	})
}
