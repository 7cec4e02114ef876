-- The webhook events page lists newest first by (received_at, provider,
-- event_id) and pages by keyset on that order. Each index below serves one
-- filter in exactly that order, so a page is an index range scan however deep:
-- no filter, one service, one type or one outcome ("failed" is what support
-- looks for).
-- The two older indexes are prefixes of the new ones and go.
CREATE INDEX processed_events_list_idx ON processed_events (received_at, provider, event_id);
CREATE INDEX processed_events_provider_list_idx ON processed_events (provider, received_at, event_id);
CREATE INDEX processed_events_outcome_list_idx ON processed_events (outcome, received_at, provider, event_id);
CREATE INDEX processed_events_type_list_idx ON processed_events (event_type, received_at, provider, event_id);
DROP INDEX processed_events_received_idx;
DROP INDEX processed_events_provider_received_idx;
