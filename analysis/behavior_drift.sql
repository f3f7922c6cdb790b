-- Behavior-metric drift across runs: every change of a cell's median.
--
-- For each variant, case and behavior metric, the median in each run is
-- compared with the median in the cell's previous run; only changes are
-- listed. `verdict` follows the metric's direction (docs/behavior-metrics.md#the-metrics):
-- for a metric that is better lower, a smaller median is `better` and a
-- larger one `worse`; neutral metrics are `neutral`. Runs in which the cell
-- captured no behaviors (NULL medians) are skipped, never read as zeros.
--
-- Columns:
--   variantId, caseId, metric   the cell and the behavior metric
--   previousRunId               the earlier run compared against
--   runId, runStartedAt         the run where the median changed
--   previousMedian, median      the two medians
--   delta                       median - previousMedian
--   verdict                     better | worse | neutral
WITH measured AS (
  SELECT * FROM cell_metrics WHERE median IS NOT NULL
),
paired AS (
  SELECT
    *,
    lag(runId) OVER w AS previousRunId,
    lag(median) OVER w AS previousMedian
  FROM measured
  WINDOW w AS (PARTITION BY variantId, caseId, metric ORDER BY runStartedAt, runId)
)
SELECT
  p.variantId,
  p.caseId,
  p.metric,
  p.previousRunId,
  p.runId,
  p.runStartedAt,
  p.previousMedian,
  p.median,
  p.median - p.previousMedian AS delta,
  CASE
    WHEN d.direction = 'lower' AND p.median < p.previousMedian THEN 'better'
    WHEN d.direction = 'lower' THEN 'worse'
    ELSE 'neutral'
  END AS verdict
FROM paired p
JOIN metric_directions d USING (metric)
WHERE p.previousMedian IS NOT NULL AND p.median <> p.previousMedian
ORDER BY p.variantId, p.caseId, d.ordinal, p.runStartedAt, p.runId;
