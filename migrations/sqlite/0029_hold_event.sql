-- Postgres gains a function that holds an event's id for one delivery
-- (postgres/0029_hold_event.sql). SQLite needs none: a delivery's
-- transaction holds the database's one write lock (BEGIN IMMEDIATE), which
-- keeps every other delivery out already. This keeps the versions of both
-- dialects in step.
SELECT 1;
