-- Placeholder on branch h-breaker only, so that 0024 (service_breakers) applies in order:
-- numbers 0020-0023 belong to other branches. Delete this file at merge.
SELECT 1;
