package models_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

func failedLink(t *testing.T, db *gorm.DB, id string, now time.Time) models.Link {
	t.Helper()
	l := models.Link{LocalType: "order", LocalID: id, ExternalService: "crm", ExternalKey: "site_order_" + id, Status: models.StatusFailed,
		LastHTTPCode: 422, LastError: "HTTP 422: bad", ErrorGroup: models.ErrorGroup("crm", 422, "HTTP 422: bad"),
		IdempotencyKey: "order-" + id + "-create", NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.Create(&l).Error)
	return l
}

// Put aside links leave the Failed queries and are counted apart; only
// failed links can be put aside, and only with a reason.
func TestPutAsideIsCountedApartAndComesBack(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		a, b := failedLink(t, db, "1", now), failedLink(t, db, "2", now)
		_, err := models.PutAside(db, []int64{a.ID}, "ana@example.com", " ", now)
		require.ErrorContains(t, err, "Say why")

		n, err := models.PutAside(db, []int64{a.ID, b.ID, 999}, "ana@example.com", "test orders", now)
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		n, err = models.PutAside(db, []int64{a.ID}, "bo@example.com", "again", now)
		require.NoError(t, err)
		require.Zero(t, n, "already put aside: the first word stands")
		l, err := models.LinkByID(db, a.ID)
		require.NoError(t, err)
		require.Equal(t, "ana@example.com", l.PutAsideBy)

		ids, err := models.FailedIDs(db, a.ErrorGroup, false, 10)
		require.NoError(t, err)
		require.Empty(t, ids)
		ids, err = models.FailedIDs(db, a.ErrorGroup, true, 10)
		require.NoError(t, err)
		require.Equal(t, []int64{b.ID, a.ID}, ids)
		newest, err := models.NewestFailures(db, 8)
		require.NoError(t, err)
		require.Empty(t, newest)
		require.NoError(t, models.RefreshFailedGroups(db, now))
		groups, err := models.FailedGroups(db, true, 0)
		require.NoError(t, err)
		require.Len(t, groups, 1)
		require.EqualValues(t, 2, groups[0].N)
		groups, err = models.FailedGroups(db, false, 0)
		require.NoError(t, err)
		require.Empty(t, groups)

		n, err = models.BringBack(db, []int64{a.ID})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		ids, err = models.FailedIDs(db, a.ErrorGroup, false, 10)
		require.NoError(t, err)
		require.Equal(t, []int64{a.ID}, ids)
	})
}

// Whatever moves a put-aside link out of failed (here a new payload through
// EnsureLinks, Sync now, and a plain status update as a webhook effect or a
// reconciliation fix does) ends the put-aside: when it fails again it is on
// Failed again.
func TestLeavingFailedEndsThePutAside(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		for i, leave := range []func(l models.Link) error{
			func(l models.Link) error {
				return models.EnsureLinks(db, l.LocalType, l.LocalID, []models.LinkSpec{{Service: "crm", ExternalKey: l.ExternalKey}}, now)
			},
			func(l models.Link) error {
				_, err := models.RequestSync(db, l.ID, "ana@example.com", now, time.Minute, "")
				return err
			},
			func(l models.Link) error {
				return db.Model(&models.Link{}).Where("id = ?", l.ID).Update("status", models.StatusSuccess).Error
			},
		} {
			l := failedLink(t, db, fmt.Sprint(10+i), now)
			_, err := models.PutAside(db, []int64{l.ID}, "ana@example.com", "known bad", now)
			require.NoError(t, err)
			require.NoError(t, leave(l), i)
			got, err := models.LinkByID(db, l.ID)
			require.NoError(t, err)
			require.NotEqual(t, models.StatusFailed, got.Status, i)
			require.Nil(t, got.PutAsideAt, "way %d", i)
			require.Empty(t, got.PutAsideBy)
			require.NoError(t, db.Model(&models.Link{}).Where("id = ?", l.ID).Update("status", models.StatusFailed).Error)
			ids, err := models.FailedIDs(db, l.ErrorGroup, false, 10)
			require.NoError(t, err)
			require.Contains(t, ids, l.ID, "failed again, it is on Failed (way %d)", i)
		}
		// A change that keeps the link failed keeps it put aside.
		l := failedLink(t, db, "20", now)
		_, err := models.PutAside(db, []int64{l.ID}, "ana@example.com", "known bad", now)
		require.NoError(t, err)
		require.NoError(t, db.Model(&models.Link{}).Where("id = ?", l.ID).Updates(map[string]any{"status": models.StatusFailed, "last_error": "other"}).Error)
		got, err := models.LinkByID(db, l.ID)
		require.NoError(t, err)
		require.NotNil(t, got.PutAsideAt)
	})
}

func TestInProgressRowsLeavePausedServicesOut(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		for _, svc := range []string{"crm", "pay", "pay"} {
			require.NoError(t, db.Create(&models.InProgress{ExternalService: svc, LocalType: "order", LocalID: fmt.Sprint(now.UnixNano()),
				Holder: "request", StartedBy: "ana", StartedAt: now, ExpiresAt: now.Add(time.Minute)}).Error)
			now = now.Add(time.Nanosecond * 1000)
		}
		_, _, err := models.Pause(db, models.ServicePause{Service: "pay", PausedBy: "ana", PausedAt: now})
		require.NoError(t, err)
		rows, n, err := models.InProgressRows(db, now, 8)
		require.NoError(t, err)
		require.EqualValues(t, 1, n.Live)
		require.EqualValues(t, 2, n.Held)
		require.Len(t, rows, 1)
		require.Equal(t, "crm", rows[0].ExternalService)
	})
}

func TestEnableUserAndLastSignIn(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		_, err := models.CreateUser(db, "root@example.com", models.RoleAdmin, "a-long-password", now)
		require.NoError(t, err)
		u, err := models.CreateUser(db, "ana@example.com", models.RoleOperator, "a-long-password", now)
		require.NoError(t, err)
		_, err = models.DisableUser(db, u.Email, now)
		require.NoError(t, err)
		got, was, err := models.EnableUser(db, u.Email, now)
		require.NoError(t, err)
		require.True(t, was)
		require.False(t, got.Disabled())
		_, was, err = models.EnableUser(db, u.Email, now)
		require.NoError(t, err)
		require.False(t, was)
		require.NoError(t, models.RecordSignIn(db, u.ID, now))
		got, err = models.UserByEmail(db, u.Email)
		require.NoError(t, err)
		require.False(t, got.Disabled())
		require.NotNil(t, got.LastSignInAt)
		require.True(t, now.Equal(*got.LastSignInAt))
	})
}

// The reason's limit counts characters, as the form's maxlength does, not
// bytes: 500 characters of Japanese (1,500 bytes) are a reason, 501 are not.
func TestAPutAsideReasonIsCountedInCharacters(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		require.NoError(t, db.Create(&models.Link{LocalType: "order", LocalID: "1", ExternalService: "crm", ExternalKey: "k1",
			Status: models.StatusFailed, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}).Error)
		n, err := models.PutAside(db, []int64{1}, "ana@example.com", strings.Repeat("顧", 501), now)
		require.ErrorContains(t, err, "Keep the reason under 500 characters.")
		require.Zero(t, n)
		n, err = models.PutAside(db, []int64{1}, "ana@example.com", strings.Repeat("顧", 500), now)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
	})
}
