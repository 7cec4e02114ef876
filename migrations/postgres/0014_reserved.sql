-- Placeholder: another branch adds migration 0014. This one keeps the
-- versions contiguous on this branch so that 0015 applies; drop it at merge.
SELECT 1;
