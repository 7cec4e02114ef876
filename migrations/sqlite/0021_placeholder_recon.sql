-- PLACEHOLDER of branch h-recon, to delete at merge: 0021 belongs to h-states (issue 14).
-- It exists only so that h-recon's 0022 applies in this branch: versions must be contiguous.
SELECT 1;
