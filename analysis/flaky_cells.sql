-- Flaky cells: cells of a run whose repeats disagree (0 < passCount < repeats).
--
-- A pass-rate verdict on a flaky cell is weak evidence: rerun it with more
-- repeats before trusting a change. Cells that always pass or always fail
-- are left out.
--
-- Columns:
--   runId, runStartedAt    the run
--   variantId, caseId      the cell
--   repeats, passCount     how many repeats ran and how many passed
--   passRate               passCount / repeats
SELECT runId, runStartedAt, variantId, caseId, repeats, passCount, passRate
FROM cells
WHERE passCount > 0 AND passCount < repeats
ORDER BY runStartedAt, runId, variantId, caseId;
