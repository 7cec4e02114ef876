-- A delivery runs each new event's effect first and stores the event with
-- its outcome in one insert, where it inserted the event, ran the effect
-- and wrote the outcome in a second write of the row. A concurrent
-- delivery of the same event must then be kept from running the effect
-- too: each first holds the event's id with a transaction-scoped advisory
-- lock (class 72651003; migrations use 72651001, admin changes 72651002),
-- then reads whether the event is stored. The read is a statement of its
-- own inside this function, so that it sees what a delivery that held the
-- lock before committed (READ COMMITTED takes a snapshot per statement, and
-- a VOLATILE function's statements each take their own); one call keeps it
-- one round trip. NULL: not stored.
CREATE FUNCTION syncdesk_hold_event(p_provider TEXT, p_event_id TEXT) RETURNS TEXT
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	PERFORM pg_advisory_xact_lock(72651003, hashtext(length(p_provider) || ':' || p_provider || p_event_id));
	RETURN (SELECT outcome FROM processed_events WHERE provider = p_provider AND event_id = p_event_id);
END
$$;
