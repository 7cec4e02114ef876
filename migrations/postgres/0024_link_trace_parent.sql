-- The W3C traceparent of the request that last queued a link's push (a
-- record's upsert, a "Sync now"), '' when tracing is off or none came: the
-- send happens later, on whichever instance claims the link, perhaps after a
-- restart, and this is how its spans join that request's trace. A constant
-- default, so adding it rewrites no rows.
ALTER TABLE external_map ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';
