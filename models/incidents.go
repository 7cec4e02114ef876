package models

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Incident is one alert rule holding for one subject, from its opening
// until its condition cleared (migration 0023).
type Incident struct {
	ID      int64
	Rule    string
	Subject string // a service's or a task's name; "" for the whole desk
	Title   string // one line, in words
	Text    string // what is wrong and what to do, as last said while open
	// ResolvedText is what its end said ("This cleared at …"); "" while
	// open, and for incidents over before migration 0036.
	ResolvedText   string
	URL            string // the page to look at, a path
	OpenedAt       time.Time
	NotifiedAt     time.Time // the last "opened" or "still open" decided
	ResolvedAt     *time.Time
	AcknowledgedBy string
	AcknowledgedAt *time.Time
}

// TableName is the incidents table.
func (Incident) TableName() string { return "incidents" }

// Notification statuses.
const (
	NotificationPending = "pending" // due at next_at, first try or retry
	NotificationSending = "sending" // claimed, under a lease
	NotificationSent    = "sent"
	NotificationGaveUp  = "gave_up"
	// NotificationSuperseded is a repeat not sent: a newer notification
	// of its incident to its channel was queued before it could go.
	NotificationSuperseded = "superseded"
)

// IncidentNotification is one state change (or repeat) of an incident to
// send to one channel, and how sending it went.
type IncidentNotification struct {
	ID         int64
	IncidentID int64
	State      string // opened, still open, resolved (notify.State)
	Channel    string
	Title      string
	Text       string
	DecidedAt  time.Time
	Status     string
	Tries      int
	NextAt     time.Time
	LeaseOwner string
	LeaseUntil *time.Time
	SentAt     *time.Time
	LastError  string
}

// TableName is the incident_notifications table.
func (IncidentNotification) TableName() string { return "incident_notifications" }

// IncidentChange is what an incident's opening, repeat or resolution
// writes: its words then, and one notification per channel.
type IncidentChange struct {
	State       string
	Title, Text string
	Channels    []string
	At          time.Time
}

// OpenIncident opens inc unless an incident of its rule and subject is
// open, and reports whether it did, with a notification per channel in
// the same transaction. The partial unique index incidents_one_open_key
// and ON CONFLICT DO NOTHING decide between instances opening it at once:
// one INSERT wins, the others insert nothing and notify nothing.
func OpenIncident(db *gorm.DB, inc Incident, c IncidentChange) (opened bool, err error) {
	at := c.At.UTC()
	err = db.Transaction(func(tx *gorm.DB) error {
		// A check that read the database before another instance's check
		// resolved this incident must not open it again at once.
		var later int64
		if err := tx.Model(&Incident{}).Where("rule = ? AND subject = ? AND resolved_at > ?", inc.Rule, inc.Subject, at).
			Count(&later).Error; err != nil {
			return fmt.Errorf("open incident %s %s: %w", inc.Rule, inc.Subject, err)
		}
		if later > 0 {
			return nil
		}
		var ids []int64
		err := tx.Raw(`INSERT INTO incidents (rule, subject, title, text, url, opened_at, notified_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (rule, subject) WHERE resolved_at IS NULL DO NOTHING RETURNING id`,
			inc.Rule, inc.Subject, c.Title, c.Text, inc.URL, at, at).Scan(&ids).Error
		if err != nil {
			return fmt.Errorf("open incident %s %s: %w", inc.Rule, inc.Subject, err)
		}
		if len(ids) == 0 {
			return nil
		}
		opened = true
		return addNotifications(tx, ids[0], c)
	})
	return opened, err
}

// RewordIncident brings the words of the open incident id up to date,
// without a notification.
func RewordIncident(db *gorm.DB, id int64, title, text string) error {
	err := db.Model(&Incident{}).Where("id = ? AND resolved_at IS NULL", id).
		Updates(map[string]any{"title": title, "text": text}).Error
	if err != nil {
		return fmt.Errorf("reword incident %d: %w", id, err)
	}
	return nil
}

// RepeatIncident marks the open incident id notified again at c.At, if
// its last notification is still the one at last, and queues a "still
// open" per channel; false when another instance repeated it first or it
// is resolved. The words of the incident are brought up to date.
func RepeatIncident(db *gorm.DB, id int64, last time.Time, c IncidentChange) (repeated bool, err error) {
	err = db.Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&Incident{}).Where("id = ? AND resolved_at IS NULL AND notified_at = ?", id, last.UTC()).
			Updates(map[string]any{"notified_at": c.At.UTC(), "title": c.Title, "text": c.Text})
		if res.Error != nil {
			return fmt.Errorf("repeat incident %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		repeated = true
		return addNotifications(tx, id, c)
	})
	return repeated, err
}

// ResolveIncident closes the open incident id at c.At and queues a
// "resolved" per channel; false when it was resolved already (by another
// instance). The incident keeps the words it was last sent with, and
// c.Text as what its end said: the page shows that, not advice to act on
// a problem that is over.
func ResolveIncident(db *gorm.DB, id int64, c IncidentChange) (resolved bool, err error) {
	err = db.Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&Incident{}).Where("id = ? AND resolved_at IS NULL", id).
			Updates(map[string]any{"resolved_at": c.At.UTC(), "resolved_text": c.Text})
		if res.Error != nil {
			return fmt.Errorf("resolve incident %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		resolved = true
		return addNotifications(tx, id, c)
	})
	return resolved, err
}

func addNotifications(tx *gorm.DB, id int64, c IncidentChange) error {
	if len(c.Channels) == 0 {
		return nil
	}
	rows := make([]IncidentNotification, len(c.Channels))
	for i, ch := range c.Channels {
		rows[i] = IncidentNotification{IncidentID: id, State: c.State, Channel: ch, Title: c.Title, Text: c.Text,
			DecidedAt: c.At.UTC(), Status: NotificationPending, NextAt: c.At.UTC()}
	}
	if err := tx.Create(&rows).Error; err != nil {
		return fmt.Errorf("queue the notifications of incident %d: %w", id, err)
	}
	return nil
}

// OpenIncidents returns every open incident, the oldest first.
func OpenIncidents(db *gorm.DB) ([]Incident, error) {
	var out []Incident
	if err := db.Where("resolved_at IS NULL").Order("opened_at, id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list open incidents: %w", err)
	}
	return out, nil
}

// ResolvedIncidents returns up to limit resolved incidents, the latest resolved first.
func ResolvedIncidents(db *gorm.DB, limit int) ([]Incident, error) {
	var out []Incident
	if err := db.Where("resolved_at IS NOT NULL").Order("resolved_at DESC, id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list resolved incidents: %w", err)
	}
	return out, nil
}

// NotificationsOf returns the notifications of the incidents ids, by
// incident, oldest first.
func NotificationsOf(db *gorm.DB, ids []int64) (map[int64][]IncidentNotification, error) {
	out := map[int64][]IncidentNotification{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []IncidentNotification
	if err := db.Where("incident_id IN ?", ids).Order("incident_id, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	for _, n := range rows {
		out[n.IncidentID] = append(out[n.IncidentID], n)
	}
	return out, nil
}

// IncidentByID reads one incident; ErrNotFound when there is none.
func IncidentByID(db *gorm.DB, id int64) (Incident, error) {
	var inc Incident
	err := db.Take(&inc, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return inc, fmt.Errorf("incident %d: %w", id, ErrNotFound)
	}
	return inc, err
}

// AcknowledgeIncident records that who has seen the open incident id and
// is on it, and returns the incident; acknowledged is false when it was
// acknowledged already (the first name stays) or is over. One conditional
// UPDATE: of two people clicking at once, one is the incident's.
func AcknowledgeIncident(db *gorm.DB, id int64, who string, now time.Time) (inc Incident, acknowledged bool, err error) {
	res := db.Model(&Incident{}).Where("id = ? AND acknowledged_by = '' AND resolved_at IS NULL", id).
		Updates(map[string]any{"acknowledged_by": who, "acknowledged_at": now.UTC()})
	if res.Error != nil {
		return inc, false, fmt.Errorf("acknowledge incident %d: %w", id, res.Error)
	}
	inc, err = IncidentByID(db, id)
	return inc, res.RowsAffected == 1, err
}

// CountOpenIncidents returns the open incidents by rule.
func CountOpenIncidents(db *gorm.DB) (map[string]int64, error) {
	var rows []struct {
		Rule string
		N    int64
	}
	if err := db.Model(&Incident{}).Select("rule, COUNT(*) AS n").Where("resolved_at IS NULL").Group("rule").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count open incidents: %w", err)
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.Rule] = r.N
	}
	return out, nil
}

// PruneIncidents deletes the incidents over before a time, with their
// notifications (ON DELETE CASCADE), by incidents_resolved_idx.
func PruneIncidents(db *gorm.DB, before time.Time) (int64, error) {
	res := db.Where("resolved_at < ?", before.UTC()).Delete(&Incident{})
	if res.Error != nil {
		return 0, fmt.Errorf("prune incidents: %w", res.Error)
	}
	return res.RowsAffected, nil
}
