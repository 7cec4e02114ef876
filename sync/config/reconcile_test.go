package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReconcileDefaultsAndPolicy(t *testing.T) {
	cfg, err := Load(writeFile(t, svc("reconcile: {auto_fix: {missing_remote: false}, compare: {order: [title, total]}}")), Overrides{})
	require.NoError(t, err)
	r := cfg.Services["crm"].Reconcile
	require.Equal(t, time.Hour, r.Every, "README: reconcile.every is 1h")
	require.Equal(t, 100, r.MaxFixes)
	require.False(t, r.Fixes("missing_remote"), "named kinds follow the setting")
	require.True(t, r.Fixes("never_synced"), "others keep the default: fix")
	require.False(t, r.Fixes("duplicate_remote"), "a duplicate is reported by default")
	require.Equal(t, []string{"title", "total"}, r.Compare["order"])
}

func TestReconcileBadValuesNameTheSetting(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{svc("reconcile: {every: -1h}"), "setting services.crm.reconcile.every"},
		{svc("reconcile: {max_fixes: -5}"), "setting services.crm.reconcile.max_fixes"},
		{svc("reconcile: {auto_fix: {gone_remote: true}}"), "setting services.crm.reconcile.auto_fix.gone_remote"},
		{svc("reconcile: {auto_fix: {duplicate_remote: true}}"), "can only be reported"},
		{svc("reconcile: {compare: {invoice: [total]}}"), "setting services.crm.reconcile.compare.invoice"},
		{svc("reconcile: {compare: {order: []}}"), "setting services.crm.reconcile.compare.order"},
	} {
		_, err := Load(writeFile(t, tc.yaml), Overrides{})
		require.Error(t, err, tc.yaml)
		require.Contains(t, err.Error(), tc.want, tc.yaml)
	}
}
