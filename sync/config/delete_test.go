package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// withObject adds lines to the crm's order object of svc("").
func withObject(lines ...string) string {
	return svc("") + "        " + strings.Join(lines, "\n        ") + "\n"
}

func TestDeleteAndArchiveSettingsAreCheckedAtStart(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{withObject("delete: DELETE /deals"), "setting services.crm.objects.order.delete: the path needs {external_id}"},
		{withObject("delete: ERASE /deals/{external_id}"), "setting services.crm.objects.order.delete"},
		{withObject("delete: DELETE /deals/{external_id}", "archive: PATCH /deals/{external_id}", "archive_body: {archived: true}"),
			"setting services.crm.objects.order.archive: give delete or archive, not both"},
		{withObject("archive: PATCH /deals/{external_id}"), "setting services.crm.objects.order.archive_body: an archive needs the body"},
		{withObject("archive: DELETE /deals/{external_id}", "archive_body: {archived: true}"), "setting services.crm.objects.order.archive: \"DELETE /deals/{external_id}\": an archive is an update"},
		{withObject("archive: PATCH /deals", "archive_body: {archived: true}"), "setting services.crm.objects.order.archive: the path needs {external_id}"},
		{withObject("archive_body: {archived: true}"), "setting services.crm.objects.order.archive_body: archive_body goes with an archive setting"},
		{withObject("archive: PATCH /deals/{external_id}", "archive_body: {archived: '.['}"), "setting services.crm.objects.order.archive_body"},
		{strings.Replace(svc(""), "POST /deals", "DELETE /deals", 1), "setting services.crm.objects.order.create: \"DELETE /deals\": DELETE removes an object; it goes in the delete setting"},
	} {
		_, err := Load(writeFile(t, tc.yaml), Overrides{})
		require.Error(t, err, tc.yaml)
		require.Contains(t, err.Error(), tc.want, tc.yaml)
	}
	for _, ok := range []string{
		withObject("delete: DELETE /deals/{external_id}"),
		withObject("archive: PATCH /deals/{external_id}", "archive_body: {archived: true}"),
	} {
		cfg, err := Load(writeFile(t, ok), Overrides{})
		require.NoError(t, err, ok)
		o := cfg.Services["crm"].Objects["order"]
		require.True(t, o.Delete != "" || (o.Archive != "" && !o.ArchiveBody.IsZero()), ok)
	}
}

// The presets delete what their providers let an API delete, and say
// nothing for a Stripe payment intent, which cannot be deleted.
func TestPresetsDeleteWhatTheProvidersCanDelete(t *testing.T) {
	cfg, err := loadPresets(t, presetFile)
	require.NoError(t, err)
	st := cfg.Services["stripe"].Objects
	require.Equal(t, "DELETE /v1/customers/{external_id}", st["customer"].Delete)
	require.Empty(t, st["payment"].Delete+st["payment"].Archive, "Stripe cannot delete a payment intent")
	require.Equal(t, "DELETE /crm/v3/objects/contacts/{external_id}", cfg.Services["hubspot"].Objects["contact"].Delete)
	require.Equal(t, "DELETE /services/data/v60.0/sobjects/Account/{external_id}", cfg.Services["salesforce"].Objects["account"].Delete)
}
