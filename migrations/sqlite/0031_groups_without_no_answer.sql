-- A failure without an HTTP answer was grouped as "service · no answer ·
-- message", which the Failed page showed for links never sent at all (a
-- type no longer routed, marked failed by a person). Such a group is now
-- "service · message": the message says what happened. The counted groups
-- are recounted from the links within seconds.
UPDATE external_map SET error_group = replace(error_group, ' · no answer · ', ' · ') WHERE error_group LIKE '% · no answer · %';
DELETE FROM stat_failed_groups;
