package migrations

import "gorm.io/gorm"

// Lock takes, in tx, the lock Apply takes: tests hold it to see who waits.
func Lock(tx *gorm.DB) error { return lock(tx, tx.Dialector.Name()) }
