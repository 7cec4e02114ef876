// Package action names what an audit entry says was done: the codes the
// audit log stores. It imports nothing, so that web, which writes the
// entries, and views, which says them in words, share one list.
package action

// The audit actions, as stored.
const (
	Login             = "auth.login"
	Logout            = "auth.logout"
	AccessDenied      = "access.denied"
	UserAdd           = "user.add"
	UserRole          = "user.role"
	UserResetPassword = "user.reset_password"
	UserDisable       = "user.disable"
	UserEnable        = "user.enable"
	TokenCreate       = "token.create"
	TokenRevoke       = "token.revoke"
	ServicePause      = "service.pause"
	ServiceResume     = "service.resume"
	LinkSync          = "link.sync"
	LinkRetry         = "link.retry" // Retry of a failed or retrying link; Sync now of any other is LinkSync
	LinkBulkRetry     = "link.bulk_retry"
	LinkMarkFailed    = "link.mark_failed"
	LinkRecreate      = "link.recreate"
	LinkPutAside      = "link.put_aside"
	LinkBringBack     = "link.bring_back"
	GroupPutAside     = "link.bulk_put_aside"
	GroupBringBack    = "link.bulk_bring_back"
	ReconcileStart    = "reconcile.start"
	ReconcileConfirm  = "reconcile.confirm"
	ReconcileCancel   = "reconcile.cancel"
	ScheduleRun       = "schedule.run"
	EventReplay       = "event.replay"
	RecordUpsert      = "record.upsert"
	RecordDelete      = "record.delete"

	// Issue 14, h-recon: a person's decisions on reconciliation findings,
	// and a look at what a provider holds of one record.
	ReconcileResolve = "reconcile.resolve"
	ReconcileApply   = "reconcile.apply"
	RecordCheck      = "record.check"

	// An operator says they are on an incident (the Alerts page).
	IncidentAcknowledge = "incident.acknowledge"
	// A batch of records from the API, audited once.
	RecordBulkUpsert = "record.bulk_upsert"

	// Issue 17: reading a source (a business database) paused and resumed.
	SourcePause  = "source.pause"
	SourceResume = "source.resume"
)
