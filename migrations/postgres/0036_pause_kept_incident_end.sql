-- kept_at: when a person took over the breaker's pause of a service (Keep
-- paused on the Services page). paused_by is then that person, while
-- paused_at and reason stay the breaker's: the service has been paused
-- since, and for that reason. NULL for a pause no one took over.
ALTER TABLE service_pauses ADD COLUMN kept_at TIMESTAMPTZ;

-- resolved_text: what an incident's end said ("This cleared at …"), as its
-- resolved notification says it. The incident keeps the words it had while
-- open in text; an incident that is over shows this instead, rather than
-- tell the reader to act.
ALTER TABLE incidents ADD COLUMN resolved_text TEXT NOT NULL DEFAULT '';
