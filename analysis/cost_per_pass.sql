-- Token, time and dollar cost per passing repeat, per run and variant.
--
-- What one pass costs: everything the variant spent in the run (failed
-- repeats included) divided by the number of repeats that passed. A variant
-- that passes less often pays for its failures here. NULL when nothing passed
-- (or, for tokens, when the agent reported no token usage).
--
-- Columns:
--   runId, runStartedAt    the run
--   variantId              the variant
--   repeats, passes        repeats run and passed (all cases of the variant)
--   tokenInputPerPass      input tokens / passes
--   tokenOutputPerPass     output tokens / passes
--   secondsPerPass         wall time of all its repeats (s) / passes
--   turnsPerPass           turns used / passes
--   costUsdPerPass         the agent's own reported cost (USD) / passes; NULL
--                          when no repeat reported a cost (Codex, Gemini CLI)
SELECT
  runId,
  min(runStartedAt) AS runStartedAt,
  variantId,
  count(*) AS repeats,
  CAST(count_if(passed) AS BIGINT) AS passes,
  sum(tokenInput) / nullif(count_if(passed), 0) AS tokenInputPerPass,
  sum(tokenOutput) / nullif(count_if(passed), 0) AS tokenOutputPerPass,
  sum(durationMs) / 1000 / nullif(count_if(passed), 0) AS secondsPerPass,
  sum(turnsUsed) / nullif(count_if(passed), 0) AS turnsPerPass,
  sum(costUsd) / nullif(count_if(passed), 0) AS costUsdPerPass
FROM repeats
GROUP BY runId, variantId
ORDER BY runStartedAt, runId, variantId;
