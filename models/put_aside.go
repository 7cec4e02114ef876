package models

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// MaxAsideReason bounds the reason a person gives for putting links aside.
const MaxAsideReason = 500

// asideReason checks the reason a put-aside needs: the next person to read
// the link must learn why it is not on Failed.
func asideReason(reason string) (string, error) {
	r := strings.TrimSpace(reason)
	switch {
	case r == "":
		return "", Invalid("Say why these links are put aside: the next person to find them reads it.")
	case utf8.RuneCountInString(r) > MaxAsideReason:
		return "", Invalid(fmt.Sprintf("Keep the reason under %d characters.", MaxAsideReason))
	}
	return r, nil
}

// PutAside acknowledges failed links on who's word, with a reason: they stay
// failed, off the Failed list, until someone brings them back or they are
// sent again. Only links failed and not yet put aside change, checked in the
// update itself, so that a retry that moved one meanwhile is never undone.
// It returns how many were put aside.
func PutAside(db *gorm.DB, ids []int64, who, reason string, now time.Time) (int64, error) {
	r, err := asideReason(reason)
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	res := db.Model(&Link{}).Where("id IN ? AND "+failedLiteral, ids).Updates(map[string]any{
		"put_aside_at": now, "put_aside_by": who, "put_aside_reason": r})
	return res.RowsAffected, res.Error
}

// BringBack returns put-aside links to the Failed list and reports how many
// came back; links no longer put aside are left as they are.
func BringBack(db *gorm.DB, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	res := db.Model(&Link{}).Where("id IN ? AND "+asideLiteral, ids).Updates(map[string]any{
		"put_aside_at": nil, "put_aside_by": "", "put_aside_reason": ""})
	return res.RowsAffected, res.Error
}

// PutAsideOne puts one failed link aside, and says in words why it could not.
func PutAsideOne(db *gorm.DB, id int64, who, reason string, now time.Time) (*Link, error) {
	n, err := PutAside(db, []int64{id}, who, reason, now)
	if err != nil {
		return nil, err
	}
	l, err := LinkByID(db, id)
	if err != nil || n == 1 {
		return l, err
	}
	if l.PutAsideAt != nil {
		return nil, Invalid("This link is already put aside; nothing changed.")
	}
	return nil, Invalid(fmt.Sprintf("Only a failed link can be put aside; this one is %s.", l.Status))
}

// BringBackOne brings one put-aside link back to Failed.
func BringBackOne(db *gorm.DB, id int64) (*Link, error) {
	n, err := BringBack(db, []int64{id})
	if err != nil {
		return nil, err
	}
	l, err := LinkByID(db, id)
	if err != nil || n == 1 {
		return l, err
	}
	return nil, Invalid("This link is not put aside (any more): a retry or a new payload since took it back; nothing changed.")
}
