-- Bait cells that stopped reproducing their misbehavior.
--
-- A bait case declares a metric and a threshold; it reproduces when the
-- cell's median of that metric exceeds the threshold (docs/gating.md#bait-cases).
-- Listed: bait cells that reproduced in some earlier run but not in their
-- latest run with behavior data. Such a bait no longer proves anything about
-- a candidate (the gate's BAIT FLAG). A case's bait is resolved as the gate
-- resolves it: its rows' declaration (capeval's JSON Lines rows carry it),
-- else its workspace case's (the `workspace_baits` table `capeval query`
-- fills); cells without stats are skipped.
--
-- Columns:
--   variantId, caseId, baitMetric, baitThreshold   the bait cell
--   lastReproducedRunId, lastReproducedAt          the last run that still misbehaved
--   lastReproducedMedian                           its median of the bait metric
--   runId, runStartedAt, median                    the latest run, which did not
WITH declared AS (
  SELECT
    c.*,
    CASE WHEN c.baitMetric IS NOT NULL THEN c.baitMetric ELSE w.baitMetric END AS metric,
    CASE WHEN c.baitMetric IS NOT NULL THEN c.baitThreshold ELSE w.baitThreshold END
      AS threshold
  FROM cells c
  LEFT JOIN workspace_baits w ON w.caseId = c.caseId
),
bait AS (
  SELECT
    c.runId,
    c.runStartedAt,
    c.variantId,
    c.caseId,
    c.metric AS baitMetric,
    c.threshold AS baitThreshold,
    m.median,
    m.median > c.threshold AS reproduces
  FROM declared c
  JOIN cell_metrics m
    ON m.runId = c.runId AND m.resultKey = c.resultKey AND m.metric = c.metric
  WHERE c.metric IS NOT NULL AND m.median IS NOT NULL
),
latest AS (
  SELECT * FROM bait
  QUALIFY row_number() OVER (
    PARTITION BY variantId, caseId ORDER BY runStartedAt DESC, runId DESC
  ) = 1
),
last_reproduced AS (
  SELECT * FROM bait WHERE reproduces
  QUALIFY row_number() OVER (
    PARTITION BY variantId, caseId ORDER BY runStartedAt DESC, runId DESC
  ) = 1
)
SELECT
  l.variantId,
  l.caseId,
  l.baitMetric,
  l.baitThreshold,
  r.runId AS lastReproducedRunId,
  r.runStartedAt AS lastReproducedAt,
  r.median AS lastReproducedMedian,
  l.runId,
  l.runStartedAt,
  l.median
FROM latest l
JOIN last_reproduced r USING (variantId, caseId)
WHERE NOT l.reproduces
ORDER BY l.variantId, l.caseId;
