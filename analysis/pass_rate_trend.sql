-- Pass-rate trend per variant and case across runs, oldest run first.
--
-- Each row is one cell in one run, with the cell's pass rate in the previous
-- run that had it, so a regression shows as a negative `change`.
--
-- Columns:
--   variantId, caseId      the cell
--   runStartedAt, runId    the run
--   repeats, passCount     repeats run and passed in that run
--   passRate               passCount / repeats
--   previousPassRate       the pass rate in the cell's previous run (NULL for its first)
--   change                 passRate - previousPassRate
SELECT
  variantId,
  caseId,
  runStartedAt,
  runId,
  repeats,
  passCount,
  passRate,
  lag(passRate) OVER w AS previousPassRate,
  passRate - lag(passRate) OVER w AS change
FROM cells
WINDOW w AS (PARTITION BY variantId, caseId ORDER BY runStartedAt, runId)
ORDER BY variantId, caseId, runStartedAt, runId;
