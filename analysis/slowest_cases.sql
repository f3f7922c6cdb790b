-- The slowest cases: wall time per repeat, over every run and variant.
--
-- Where the eval's time goes. Sorted by median wall time per repeat
-- (agent + grader + setup), slowest first; the 20 slowest are listed.
--
-- Columns:
--   caseId                 the case
--   runs, repeats          how many runs and repeats measured it
--   medianSeconds          median wall time of a repeat
--   p90Seconds             90th percentile (interpolated)
--   maxSeconds             the slowest repeat
--   medianAgentSeconds     median time in the agent
--   medianVerifySeconds    median time in the grader
SELECT
  id AS caseId,
  count(DISTINCT runId) AS runs,
  count(*) AS repeats,
  median(durationMs) / 1000 AS medianSeconds,
  quantile_cont(durationMs, 0.9) / 1000 AS p90Seconds,
  max(durationMs) / 1000 AS maxSeconds,
  median(agentDurationMs) / 1000 AS medianAgentSeconds,
  median(verifyDurationMs) / 1000 AS medianVerifySeconds
FROM repeats
WHERE durationMs IS NOT NULL
GROUP BY id
ORDER BY medianSeconds DESC, caseId
LIMIT 20;
