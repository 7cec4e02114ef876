// Package discrepancy names the kinds of difference a reconciliation run
// finds. It imports nothing of syncdesk's, so that the configuration can
// check its auto_fix policy against them and models can store them.
package discrepancy

// Kinds of discrepancy: what a reconciliation run found wrong with one key.
const (
	MissingRemote   = "missing_remote"    // a successful link whose object the provider no longer has
	UnlinkedRemote  = "unlinked_remote"   // an object carrying our key that no link points at
	DuplicateRemote = "duplicate_remote"  // two or more objects carrying one key
	FieldMismatch   = "field_mismatch"    // the object differs from the record's desired state
	NeverSynced     = "never_synced"      // a routed record that never reached the provider
	FailedButExists = "failed_but_exists" // a failed link whose object exists after all
	// DeletedButPresent: an object carrying the key of a deleted record.
	DeletedButPresent = "deleted_but_present"
)

// Kinds lists every kind in the order pages show them.
var Kinds = []string{MissingRemote, UnlinkedRemote, DuplicateRemote,
	FieldMismatch, NeverSynced, FailedButExists, DeletedButPresent}
