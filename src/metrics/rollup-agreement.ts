/**
 * A rollup source checked against the base rows at start-up: a measure declared wrong (a stored count
 * counted as rows, not summed: 744 invoices against 1,231) passes every static check, so the engine
 * asks the database. For each rollup source, the week of UTC days up to the data's newest is measured
 * twice, read from the rollup and from the base rows, in one snapshot, in total (per currency for
 * money). Any figure that differs refuses the source, in one line with the first difference
 * (src/db/doctor/declared-sources.ts runs the statements).
 */
import { sql, type CompiledQuery, type Kysely } from 'kysely';
import type { DeclarationProbe } from '../registry/types.js';
import { MAX_METRICS, type MetricSource, type MetricsModel } from './declarations.js';
import type { MetricsArgs } from './call.js';
import { metricsStatement } from './statement.js';

/**
 * The days measured twice, ending on the data's newest UTC day: a week, so that sparse data still
 * puts several rows in one rollup row somewhere (two days of the test data did not). A measure's
 * mistake shows in the totals; grouped by the rollup's attributes, the sales pack's four probes took
 * 1.7 s at 2M orders instead of 0.55 s, so an attribute mapped to the wrong column is left to the
 * contract suite, and drift on other days to check-rollups.
 */
const DAYS = 7;
const DAY_MS = 86_400_000;
/** More rows than a call in total returns (one per currency). */
const ROWS = 1000;

export const ROLLUP_AGREEMENT_FIX =
  "a rollup's measure adds up what its rows store as the base rows measure it (a stored count is summed, aggregate: 'sum' of its count column, not counted); if the declaration is right, its rows have drifted: run querygate check-rollups, then its rebuild";

/** The metrics a rollup source can be checked by: those it measures that are not ratios (ratios follow from their parts). */
function checkedMetrics(model: MetricsModel, source: MetricSource): string[][] {
  const measured = model.metrics.filter((m) => !m.ratio && m.name in source.measures);
  // Counts in a call of their own, so that the first figure compared is one total, not one per currency.
  const counts = measured.filter((m) => m.unit === 'count').map((m) => m.name);
  const others = measured.filter((m) => m.unit !== 'count').map((m) => m.name);
  const chunks = (names: string[]): string[][] =>
    Array.from({ length: Math.ceil(names.length / MAX_METRICS) }, (_, i) =>
      names.slice(i * MAX_METRICS, (i + 1) * MAX_METRICS),
    );
  return [...chunks(counts), ...chunks(others)];
}

/** The one probe of each rollup source of a model, read as the reader in one snapshot. */
export function rollupAgreementProbes(db: Kysely<unknown>, model: MetricsModel, tool: string): DeclarationProbe[] {
  const base = model.sources.filter((s) => !s.rollup);
  const last = base[base.length - 1];
  if (last === undefined) return [];
  const ctx = { timeZone: 'UTC' };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const any = db as Kysely<any>;
  const newest: CompiledQuery = model.dataThrough
    ? model.dataThrough(any, ctx).limit(1).compile()
    : last
        .rows(any)
        .select(sql<Date>`max(${sql.ref(last.time)})`.as('data_through'))
        .compile();
  return model.sources
    .filter((s) => s.rollup)
    .map((source) => ({
      declaration: `metrics of ${tool}: source ${source.name}`,
      statement: newest,
      fix: ROLLUP_AGREEMENT_FIX,
      agrees: (through: Date) => {
        const end = new Date(Math.floor(through.getTime() / DAY_MS) * DAY_MS);
        const start = new Date(end.getTime() - (DAYS - 1) * DAY_MS);
        const days = { start_date: start.toISOString().slice(0, 10), end_date: end.toISOString().slice(0, 10) };
        return checkedMetrics(model, source).map((metrics) => {
          const args: MetricsArgs = { metrics, ...days, limit: ROWS };
          const read = (sources: readonly MetricSource[]): CompiledQuery =>
            metricsStatement(db, { ...model, sources }, args, ctx)
              .limit(ROWS)
              .compile();
          return {
            call: `${days.start_date}..${days.end_date} (UTC)`,
            rollup: read([source, ...base]),
            base: read(base),
          };
        });
      },
    }));
}
