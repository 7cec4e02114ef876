package models

import (
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ClaimNotifications takes up to limit due notifications for owner until
// now+lease: pending ones whose next_at has come, and ones being sent
// whose lease ran out (the instance sending them died). The claim is
// counted as a try. On Postgres FOR UPDATE SKIP LOCKED hands each row to
// one of the instances claiming at once, and the status/lease condition is
// checked again on the locked row; on SQLite the single UPDATE runs under
// the database's one write lock. Either way one notification is sent once
// (and again only after its lease ran out with no outcome written).
//
// A channel gets an incident's notifications in the order they were
// decided: one is not claimed while an older one of the same incident to
// the same channel is still pending or being sent, so that a "resolved"
// due now never overtakes an "opened" waiting for its retry. The older
// one's row is written first (its transaction committed before), so an
// instance that sees the newer row sees the older too.
func ClaimNotifications(db *gorm.DB, owner string, now time.Time, lease time.Duration, limit int) ([]IncidentNotification, error) {
	now = now.UTC()
	due := `((status = 'pending' AND next_at <= ?) OR (status = 'sending' AND lease_until <= ?)) AND NOT EXISTS (
		SELECT 1 FROM incident_notifications o WHERE o.incident_id = incident_notifications.incident_id
		AND o.channel = incident_notifications.channel AND o.id < incident_notifications.id AND o.status IN ('pending', 'sending'))`
	lock := ""
	if Dialect(db) == Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	q := `UPDATE incident_notifications SET status = 'sending', lease_owner = ?, lease_until = ?, tries = tries + 1
		WHERE id IN (SELECT id FROM incident_notifications WHERE ` + due + ` ORDER BY next_at, id LIMIT ?` + lock + `)
		AND (` + due + `) RETURNING *`
	var out []IncidentNotification
	if err := db.Raw(q, owner, now.Add(lease), now, now, limit, now, now).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("claim due notifications: %w", err)
	}
	return out, nil
}

// SupersedeNotifications marks as superseded, never to be sent, the
// pending notifications in state (the repeats, "still open") that a newer
// notification of the same incident to the same channel replaces: when a
// channel comes back after a while, it is told where the incident stands
// now, not every repeat it missed. One being sent is left to its send.
func SupersedeNotifications(db *gorm.DB, state string) error {
	err := db.Exec(`UPDATE incident_notifications SET status = ? WHERE status = 'pending' AND state = ? AND EXISTS (
		SELECT 1 FROM incident_notifications n WHERE n.incident_id = incident_notifications.incident_id
		AND n.channel = incident_notifications.channel AND n.id > incident_notifications.id)`, NotificationSuperseded, state).Error
	if err != nil {
		return fmt.Errorf("mark superseded notifications: %w", err)
	}
	return nil
}

// NotificationOutcome is how one send of a claimed notification went.
type NotificationOutcome struct {
	Status string    // sent, pending (to retry at Next) or gave_up
	At     time.Time // of the outcome
	Next   time.Time // pending: the retry's time
	Error  string    // in words, secrets masked; "" when sent
}

// FinishNotification writes a claimed notification's outcome, if owner's
// claim still holds it; false when it does not (the lease ran out and
// another instance took it over).
func FinishNotification(db *gorm.DB, id int64, owner string, o NotificationOutcome) (bool, error) {
	set := map[string]any{"status": o.Status, "lease_owner": "", "lease_until": nil, "last_error": o.Error}
	switch o.Status {
	case NotificationSent:
		set["sent_at"] = o.At.UTC()
	case NotificationPending:
		set["next_at"] = o.Next.UTC()
	}
	res := db.Model(&IncidentNotification{}).Where("id = ? AND status = 'sending' AND lease_owner = ?", id, owner).Updates(set)
	if res.Error != nil {
		return false, fmt.Errorf("finish notification %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// IncidentsByID reads the incidents ids, by id.
func IncidentsByID(db *gorm.DB, ids []int64) (map[int64]Incident, error) {
	var rows []Incident
	if err := db.Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read incidents: %w", err)
	}
	out := make(map[int64]Incident, len(rows))
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, nil
}
