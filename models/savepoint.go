package models

import "gorm.io/gorm"

// Savepoint opens a savepoint named name in tx; name is the caller's
// constant, never input.
func Savepoint(tx *gorm.DB, name string) error { return tx.Exec("SAVEPOINT " + name).Error }

// RollbackToSavepoint undoes tx's work since the savepoint name, which
// stays open.
func RollbackToSavepoint(tx *gorm.DB, name string) error {
	return tx.Exec("ROLLBACK TO SAVEPOINT " + name).Error
}

// ReleaseSavepoint closes the savepoint name, keeping its work in tx.
func ReleaseSavepoint(tx *gorm.DB, name string) error {
	return tx.Exec("RELEASE SAVEPOINT " + name).Error
}
