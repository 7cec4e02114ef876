package reconcile

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/discrepancy"
)

func orderType(t *testing.T, compare []string) objectType {
	t.Helper()
	svc := crmConfig("http://127.0.0.1:1")
	if compare != nil {
		svc.Reconcile.Compare = map[string][]string{"order": compare}
	}
	groups := listGroups(Service{Name: "crm", Config: svc})
	require.Len(t, groups, 1)
	return groups[0].types[0]
}

func TestDecide(t *testing.T) {
	const payload = `{"title":"Order 1","total":10.50}`
	same := `{"external_key":"site_order_1","title":"Order 1","total":10.5,"stage":"new"}`
	differs := `{"external_key":"site_order_1","title":"Renamed","total":10.5}`
	success := func(id string) *linkView {
		return &linkView{id: 7, status: models.StatusSuccess, externalID: id, key: "site_order_1"}
	}
	failed := func(id string) *linkView {
		return &linkView{id: 7, status: models.StatusFailed, externalID: id, key: "site_order_1", lastError: "HTTP 422"}
	}
	remote := func(id, fields string) []remoteView {
		return []remoteView{{id: id, key: "site_order_1", fields: fields}}
	}
	tests := []struct {
		name     string
		s        subject
		compare  []string
		kind     string // "" = nothing found
		fixable  bool
		adoptsAs string // RecordHash expected on an adoption
	}{
		{"two objects, one key", subject{remotes: append(remote("deal_1", same), remote("deal_2", same)...), link: success("deal_1")},
			nil, discrepancy.DuplicateRemote, false, ""},
		{"no link, no object", subject{}, nil, discrepancy.NeverSynced, true, ""},
		{"no link, our object holds the record", subject{remotes: remote("deal_1", same)}, nil, discrepancy.UnlinkedRemote, true, "h1"},
		{"no link, our object differs", subject{remotes: remote("deal_1", differs)}, nil, discrepancy.UnlinkedRemote, true, ""},
		{"in sync; 10.50 and 10.5 are one amount", subject{link: success("deal_1"), remotes: remote("deal_1", same)}, nil, "", false, ""},
		{"a field differs", subject{link: success("deal_1"), remotes: remote("deal_1", differs)}, nil, discrepancy.FieldMismatch, true, ""},
		{"a field not compared differs", subject{link: success("deal_1"), remotes: remote("deal_1", differs)}, []string{"total"}, "", false, ""},
		{"object gone", subject{link: success("deal_1")}, nil, discrepancy.MissingRemote, true, ""},
		{"object lost our key", subject{link: success("deal_1"), linkIDSeen: true}, nil, discrepancy.FieldMismatch, true, ""},
		{"key carried by another object", subject{link: success("deal_1"), remotes: remote("deal_9", same)}, nil, discrepancy.UnlinkedRemote, true, "h1"},
		{"failed create, object exists", subject{link: failed(""), remotes: remote("deal_1", same)}, nil, discrepancy.FailedButExists, true, "h1"},
		{"failed create, object differs", subject{link: failed(""), remotes: remote("deal_1", differs)}, nil, discrepancy.FailedButExists, true, ""},
		{"failed create, no object", subject{link: failed("")}, nil, discrepancy.NeverSynced, false, ""},
		{"failed update, object holds the record", subject{link: failed("deal_1"), remotes: remote("deal_1", same)}, nil, discrepancy.FailedButExists, true, "h1"},
		{"failed update, object differs", subject{link: failed("deal_1"), remotes: remote("deal_1", differs)}, nil, "", false, ""},
		{"being sent", subject{link: &linkView{id: 7, status: models.StatusProcessing}}, nil, "", false, ""},
		{"queued", subject{link: &linkView{id: 7, status: models.StatusRetry}}, nil, "", false, ""},
		// A push still pending is already fixing a difference: no field_mismatch for it.
		{"a push waits, object differs", subject{link: &linkView{id: 7, status: models.StatusNew, externalID: "deal_1"}, remotes: remote("deal_1", differs)}, nil, "", false, ""},
		{"a push retries, object differs", subject{link: &linkView{id: 7, status: models.StatusRetry, externalID: "deal_1"}, remotes: remote("deal_1", differs)}, nil, "", false, ""},
		{"a push is going, object differs", subject{link: &linkView{id: 7, status: models.StatusProcessing, externalID: "deal_1"}, remotes: remote("deal_1", differs)}, nil, "", false, ""},
		{"changed since the run began", subject{link: &linkView{id: 7, status: models.StatusSuccess, externalID: "deal_1", moved: true}}, nil, "", false, ""},
		{"deleted on the provider's word", subject{link: &linkView{id: 7, status: models.StatusFailed, externalID: "deal_1", deleted: true}}, nil, "", false, ""},
		// A deleted record: nothing to create, whatever its link says; an
		// object under its key is reported, never adopted nor re-created.
		{"deleted record, object gone", subject{deleted: true, link: &linkView{id: 7, status: models.StatusDeleted, key: "site_order_1"}}, nil, "", false, ""},
		{"deleted record, no link, no object", subject{deleted: true}, nil, "", false, ""},
		{"deleted record, its delete pending", subject{deleted: true, link: &linkView{id: 7, status: models.StatusNew, externalID: "deal_1"},
			remotes: remote("deal_1", same)}, nil, "", false, ""},
		{"deleted record, object re-appeared", subject{deleted: true, link: &linkView{id: 7, status: models.StatusDeleted, key: "site_order_1"},
			remotes: remote("deal_2", same)}, nil, discrepancy.DeletedButPresent, false, ""},
		{"deleted record, no delete at the service", subject{deleted: true, link: failed("deal_1"), remotes: remote("deal_1", same)},
			nil, discrepancy.DeletedButPresent, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.localType, tt.s.localID, tt.s.payload, tt.s.contentHash = "order", "1", payload, "h1"
			v, found := decide(tt.s, orderType(t, tt.compare), "crm")
			require.Equal(t, tt.kind != "", found, "found anything: %+v", v.f)
			if !found {
				return
			}
			require.Equal(t, tt.kind, v.f.Kind, v.f.Detail)
			require.Equal(t, tt.fixable, v.fixable, v.f.Detail)
			require.Equal(t, tt.adoptsAs, v.f.RecordHash)
			require.Equal(t, "site_order_1", v.f.ExternalKey)
			require.NotEmpty(t, v.f.Detail)
		})
	}
}

func TestFieldMismatchNamesTheFields(t *testing.T) {
	differ := diffFields(`{"title":"A","total":"1.00","stage":"new"}`, `{"title":"B","total":"1.00"}`, orderType(t, nil))
	require.Equal(t, []string{"stage", "title"}, differ, "an absent field differs too")
	require.Empty(t, diffFields(`{"external_key":"mine","title":"A"}`, `{"external_key":"site_order_1","title":"A"}`, orderType(t, nil)),
		"our key is the outbox's to set, not a compared field")
}

// Types sharing a list endpoint are listed once; each object goes to the
// type whose key template it matches, and someone else's objects to none.
func TestClassifyByKeyTemplate(t *testing.T) {
	svc := crmConfig("http://127.0.0.1:1")
	lead := svc.Objects["order"]
	lead.ExternalKey = "site_lead_{local_id}"
	svc.Objects["lead"] = lead
	plain := svc.Objects["order"]
	plain.List, plain.ExternalKey = "GET /invoices?cursor={cursor}", ""
	svc.Objects["invoice"] = plain
	groups := listGroups(Service{Name: "crm", Config: svc})
	require.Len(t, groups, 2)
	require.Equal(t, "GET /deals?cursor={cursor}", groups[0].endpoint)
	require.Len(t, groups[0].types, 2, "order and lead share /deals")
	for _, tc := range []struct {
		item          map[string]any
		typ, id, want string
	}{
		{map[string]any{"id": "deal_1", "external_key": "site_order_12"}, "order", "12", "deal_1"},
		{map[string]any{"id": "deal_2", "external_key": "site_lead_7"}, "lead", "7", "deal_2"},
		{map[string]any{"id": "deal_3", "external_key": "site_order_"}, "", "", ""},
		{map[string]any{"id": "deal_4", "external_key": "theirs_1"}, "", "", ""},
		{map[string]any{"id": "deal_5"}, "", "", ""},
		{map[string]any{"external_key": "site_order_1"}, "", "", ""},
	} {
		s, ok := groups[0].classify(9, tc.item)
		require.Equal(t, tc.typ != "", ok, "%v", tc.item)
		require.Equal(t, tc.typ, s.LocalType)
		require.Equal(t, tc.id, s.LocalID)
		require.Equal(t, tc.want, s.ExternalID)
	}
	// Two types by the default template, one name the other's prefix: a key
	// goes to the type whose template says more of it.
	line := svc.Objects["order"]
	line.ExternalKey = "site_order_line_{local_id}"
	svc.Objects["order_line"] = line
	groups = listGroups(Service{Name: "crm", Config: svc})
	s, ok := groups[0].classify(9, map[string]any{"id": "deal_6", "external_key": "site_order_line_5"})
	require.True(t, ok)
	require.Equal(t, []string{"order_line", "5"}, []string{s.LocalType, s.LocalID}, "not order line_5")
	s, ok = groups[0].classify(9, map[string]any{"id": "deal_7", "external_key": "site_order_5"})
	require.True(t, ok)
	require.Equal(t, []string{"order", "5"}, []string{s.LocalType, s.LocalID})

	s, ok = groups[1].classify(9, map[string]any{"id": 42, "external_key": "invoice_A-1"})
	require.False(t, ok, "a numeric id that did not come through JSON is no id")
	s, ok = groups[1].classify(9, map[string]any{"id": "inv_42", "external_key": "invoice_A-1"})
	require.True(t, ok, "the default template {local_type}_{local_id}")
	require.Equal(t, "A-1", s.LocalID)
	require.JSONEq(t, `{"external_key":"invoice_A-1"}`, s.Fields, "the id is not a compared field")
}
