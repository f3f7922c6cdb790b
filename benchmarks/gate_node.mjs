// The straightforward gate in Node, as the original TypeScript harness computes it:
// every row parsed, rows grouped per cell, a sorted median per metric. benchmarks/gate.py
// times it beside `capeval gate` to say how fast this machine is against the issue's
// quoted figure for the TypeScript harness (about 2.1 s and 890 MiB on the same work).
//
//   node benchmarks/gate_node.mjs BASE.jsonl CANDIDATE.jsonl   (exit 0, 1 or 3 like the gate)
import { readFileSync } from "node:fs";

const METRICS = [
  "shellCommandCount", "envAssignmentCommandCount", "chainSegmentCount",
  "maxChainSegmentsPerCommand", "networkCommandCount", "webFetchToolCallCount",
  "taskToolCallCount", "editViaShellCount", "repeatedSearchCount",
  "longestToolOnlyStreak", "maxTurnDurationMs",
];

function median(values) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function cells(path) {
  const rows = readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line));
  const grouped = new Map();
  for (const row of rows) {
    if (!grouped.has(row.resultKey)) grouped.set(row.resultKey, []);
    grouped.get(row.resultKey).push(row);
  }
  const out = new Map();
  for (const [key, cellRows] of grouped) {
    const medians = {};
    for (const m of METRICS) {
      medians[m] = median(
        cellRows.filter((r) => r.behaviors && r.behaviors[m] != null).map((r) => r.behaviors[m]),
      );
    }
    out.set(key, {
      n: cellRows.length,
      passes: cellRows.filter((r) => r.passed === true).length,
      medians,
      bait: cellRows.find((r) => r.bait)?.bait ?? null,
    });
  }
  return out;
}

const base = cells(process.argv[2]);
const cand = cells(process.argv[3]);
let regressed = 0;
let flags = 0;
for (const [key, c] of cand) {
  const b = base.get(key);
  if (!b) continue;
  if (c.passes * b.n < b.passes * c.n) regressed++;
  const bait = c.bait ?? b.bait;
  if (bait && b.medians[bait.metric] != null && b.medians[bait.metric] <= bait.threshold) flags++;
}
process.exit(regressed ? 1 : flags ? 3 : 0);
