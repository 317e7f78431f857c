import type { RawResult } from '../../db/connect.js';
import { ArgumentError, ConfigError } from '../../lib/errors.js';
import { MAX_ROWS } from '../../lib/arguments.js';
import { comparisonCut, comparisonRange, unequalElapsed, type Comparison } from '../../lib/comparison.js';
import type { DataScope } from '../../lib/data-scope.js';
import { isoUtc } from '../../lib/local-day.js';
import { cutAtDataThrough, cutEcho } from '../../lib/running.js';
import type { Entry } from '../entries.js';
import type { CallDeps } from '../interface.js';
import { shapeRows } from '../shaping/rows.js';
import { builderContext, type TemplateLimits } from '../types.js';
import { StatementFailed } from './admission.js';
import { readDataThrough } from './data-through.js';
import { statementFor } from './statements.js';

/**
 * Answers a validated call of a template, or a step of a report: for a call, the pack's high-water
 * mark when it declares one (a running range is cut there when the data stop before now); its
 * statement for the range asked for (and, with `compare_to`, for the comparison range), the rows
 * shaped and presented, and the output checked against its schema. A running range that cannot be compared on equal elapsed time throws
 * ArgumentError; a statement that fails throws StatementFailed; a template that breaks its own
 * contract throws anything else (a programmer error).
 */
export async function answer(
  entry: Entry,
  asked: Record<string, unknown>,
  deps: CallDeps,
  signal: AbortSignal,
  limit: TemplateLimits | undefined,
  scope: DataScope | undefined,
  reportStep = false,
): Promise<{ data: Record<string, unknown>; rowCount: number }> {
  const { template } = entry;
  // The builder's context: the reporting zone, and the caller's scope for a scoped caller.
  // The seed of the person keys of protected counts: derived from the token key, so stable across restarts.
  const ctx = builderContext(
    template,
    { timeZone: deps.ctx.timeZone, ...(scope ? { dataScope: scope } : {}) },
    entry.threshold,
    deps.tokenize('cell_key', 'seed'),
  );
  const cap = Math.min(template.rowLimit?.(asked) ?? MAX_ROWS, MAX_ROWS, limit?.maxRows ?? MAX_ROWS);
  // Taken before the statement is sent: its snapshot is later, so it holds every commit made before this instant.
  // On a hot standby, the reader says how fresh its data is (an earlier instant when replay is behind).
  let dataAsOf = new Date().toISOString();
  let stale = false;
  // Read before the figures, whose snapshot is later: they hold every row up to it. A report cuts
  // the ranges of its steps itself, at the instant it runs, so its steps read no mark. The statement
  // is built first, so that one its checks refuse sends nothing at all.
  const mark = reportStep ? undefined : template.dataThrough;
  if (mark) statementFor(entry, asked, cap, deps.db, ctx);
  const dataThrough = mark ? await readDataThrough(mark, deps.db, signal, ctx) : undefined;
  const args =
    typeof dataThrough === 'string' ? cutAtDataThrough(asked, Date.parse(dataThrough), deps.ctx.timeZone) : asked;
  const unequal = unequalComparison(args, deps.ctx.timeZone);
  if (unequal) throw new ArgumentError([{ field: 'compare_to', rule: unequal }]);
  const run = async (values: Record<string, unknown>): Promise<{ output: Record<string, unknown>; rows: number }> => {
    // Built outside the try: a template that breaks its contract is a programmer error, not the database's.
    const head = template.totalRows ?? 0;
    const statement = statementFor(entry, values, cap + head, deps.db, ctx);
    let result: RawResult;
    try {
      result = await deps.db.execute(statement, signal);
    } catch (err) {
      throw new StatementFailed(err);
    }
    if (result.freshness) {
      if (result.freshness.asOf !== undefined && result.freshness.asOf < dataAsOf) dataAsOf = result.freshness.asOf;
      stale ||= result.freshness.stale;
    }
    const rows = shapeRows(entry, result, Math.min(result.rows.length, cap + head), deps.tokenize);
    const output = template.present(rows, { truncated: result.rows.length > cap + head }, values, ctx);
    return { output, rows: rows.length };
  };
  const current = await run(args);
  let { output } = current;
  const compareTo = args.compare_to as Comparison | undefined;
  if (compareTo !== undefined && template.compare) {
    const [start, end] = [args.start_date as string, args.end_date as string];
    const range = comparisonRange(start, end, compareTo);
    // A range still running is compared with the same part of the other: cut at the same local time of day.
    const until =
      typeof args.until === 'string'
        ? isoUtc(comparisonCut(start, end, compareTo, Date.parse(args.until), deps.ctx.timeZone))
        : undefined;
    const { compare_to: _compare, period: _period, until: _until, ...rest } = args;
    const priorArgs = { ...rest, ...range, ...(until ? { until } : {}) };
    const prior = await run(template.priorArguments ? template.priorArguments(priorArgs) : priorArgs);
    output = template.compare(output, prior.output, {
      compare_to: compareTo,
      ...range,
      ...cutEcho({ until }, deps.ctx.timeZone),
    });
  }
  // A list that was not cut says nothing of it: `truncated` is there only when true (every answer's
  // bytes are a model's to read; the instructions say so once).
  const { truncated, ...uncut } = output;
  const checked = entry.output.safeParse({
    ...(truncated === false ? uncut : output),
    data_as_of: dataAsOf,
    ...(dataThrough === undefined ? {} : { data_through: dataThrough }),
    ...(stale ? { data_stale: true } : {}),
    ...(scope ? { data_scope: scope } : {}),
  });
  if (!checked.success) throw new ConfigError(`output does not match its schema: ${checked.error.message}`);
  return { data: checked.data, rowCount: current.rows };
}

/** Why a call's running range cannot be compared on equal elapsed time (src/lib/comparison.ts), if it cannot. */
function unequalComparison(args: Record<string, unknown>, timeZone: string): string | undefined {
  const compareTo = args.compare_to as Comparison | undefined;
  if (compareTo === undefined || typeof args.until !== 'string') return undefined;
  return unequalElapsed(
    args.start_date as string,
    args.end_date as string,
    compareTo,
    Date.parse(args.until),
    timeZone,
  );
}
