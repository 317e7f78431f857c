/**
 * `query_metrics`: the one tool a pack's metric declarations derive. It is a template like any other,
 * so the registry's one door (validation, read-only transaction, timeout, row cap, masking, data
 * scope, protected counts, audit) serves it; the engine only writes its contract and its statement.
 */
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { label, MAX_ROWS, rowLimit } from '../lib/arguments.js';
import { changeOf, compareToField, COMPARISONS } from '../lib/comparison.js';
import { checkDateRange, dateRangeFields, DATE_RANGE_ALWAYS, type DayBucket } from '../lib/date-range.js';
import { isoInZone } from '../lib/local-day.js';
import { bucketBounds, echoRange, rangeEcho } from '../lib/result-shape.js';
import { cutFields } from '../lib/running.js';
import type {
  ColumnSpec,
  ComparisonEcho,
  DataScopeDimension,
  PersonalColumns,
  QueryTemplate,
  ResultRow,
} from '../registry/types.js';
import { CYCLIC_TIMES, MAX_METRICS, TIME_GRAINS, type MetricsModel } from './declarations.js';
import { checkedArguments } from './checked-arguments.js';
import { guideOf } from './guide.js';
import { baseMetrics, metricsStatement, selectedColumns, type MetricsArgs } from './statement.js';

export const METRICS_TOOL = 'query_metrics';

const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const MAX_FILTER_VALUES = 50;

type Figures = Record<string, string | number | boolean | null>;

/** Refuses a model the compiler cannot serve, in one line with the fix. */
function checkModel(model: MetricsModel, personal: PersonalColumns): void {
  const where = `metrics of ${model.toolName ?? METRICS_TOOL}`;
  if (model.toolName !== undefined && !/^query_[a-z0-9_]+$/.test(model.toolName)) {
    throw new ConfigError(`${where}: toolName must be snake_case and start with query_`);
  }
  const names = new Set<string>();
  for (const n of [...model.metrics.map((m) => m.name), ...model.attributes.map((a) => a.name)]) {
    if (!/^[a-z][a-z0-9_]*$/.test(n)) throw new ConfigError(`${where}: name ${JSON.stringify(n)} must be snake_case`);
    if (names.has(n) || [...TIME_GRAINS, ...CYCLIC_TIMES, 'currency'].includes(n as never)) {
      throw new ConfigError(`${where}: ${n} is declared twice or is a reserved name; rename it`);
    }
    names.add(n);
  }
  for (const m of model.metrics) {
    if (/^TODO\b/.test(m.description)) {
      throw new ConfigError(
        `${where}: metric ${m.name} is scaffolded but not filled in: write its description (querygate new-metric)`,
      );
    }
    for (const part of m.ratio ?? []) {
      if (!model.metrics.some((x) => x.name === part && !x.ratio)) {
        throw new ConfigError(
          `${where}: ratio ${m.name} names ${part}, which is not a declared metric that is not a ratio`,
        );
      }
    }
  }
  for (const s of model.sources) {
    const money = model.metrics.find((m) => m.unit === 'money' && !m.ratio && m.name in s.measures);
    if (money && s.currency === undefined) {
      throw new ConfigError(
        `${where}: source ${s.name} measures money (${money.name}), so it must name its currency column`,
      );
    }
  }
  const last = model.sources[model.sources.length - 1];
  if (!last) throw new ConfigError(`${where}: declare at least one source (the base views)`);
  for (const m of model.metrics.filter((x) => !x.ratio)) {
    if (!(m.name in last.measures)) {
      throw new ConfigError(
        `${where}: the last source (${last.name}) must measure every metric; add ${m.name} to its measures`,
      );
    }
    if (m.protected && (!m.people || m.unit !== 'count')) {
      throw new ConfigError(`${where}: ${m.name} is protected, so it must be a count of people (people: true, unit count)`);
    }
    if (m.protected && last.people === undefined) {
      throw new ConfigError(`${where}: ${m.name} is protected, so source ${last.name} must name its people column`);
    }
  }
  for (const a of model.attributes) {
    if (!(a.name in last.attributes)) {
      throw new ConfigError(
        `${where}: the last source (${last.name}) must carry every attribute; add ${a.name} to its attributes`,
      );
    }
  }
  // A personal column as an attribute is refused by the registry's selection check: dimensions are
  // declared plain, and a personal source selected plain fails start-up.
  void personal;
}

/** Builds the tool from a pack's metric declarations. */
export function metricsTemplate(
  model: MetricsModel,
  personal: PersonalColumns,
  dimensions: readonly DataScopeDimension[] = [],
): QueryTemplate<MetricsArgs, Record<string, unknown>> {
  checkModel(model, personal);
  const name = model.toolName ?? METRICS_TOOL;
  const metricNames = model.metrics.map((m) => m.name) as [string, ...string[]];
  const dimensionNames = [...TIME_GRAINS, ...CYCLIC_TIMES, ...model.attributes.map((a) => a.name)] as [
    string,
    ...string[],
  ];
  const unitOf = (name: string): string => model.metrics.find((m) => m.name === name)!.unit;

  const filterFields = Object.fromEntries(
    model.attributes.map((a) => [
      a.name,
      z
        .array(a.values ? z.enum(a.values) : label)
        .min(1)
        .max(MAX_FILTER_VALUES)
        .optional(),
    ]),
  );
  const input = z
    .strictObject({
      metrics: z.array(z.enum(metricNames)).min(1).max(MAX_METRICS),
      group_by: z.array(z.enum(dimensionNames)).max(2).optional(),
      filters: z
        .strictObject(filterFields, {
          error: `is not a known filter; the filters are ${model.attributes.map((a) => a.name).join(', ')}`,
        })
        .optional(),
      ...dateRangeFields,
      ...compareToField,
      order_by: z.enum(metricNames).optional().describe('A metric asked for, biggest first'),
      limit: rowLimit(MAX_ROWS).describe('Rows per currency'),
    })
    .superRefine((value, ctx) => {
      const dup = (list: readonly string[] | undefined): string | undefined =>
        list?.find((x, i) => list.indexOf(x) !== i);
      const twice = dup(value.metrics) ?? dup(value.group_by);
      if (twice !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: [dup(value.metrics) ? 'metrics' : 'group_by'],
          message: `${twice} is given twice`,
        });
      const grains = (value.group_by ?? []).filter((d) => (TIME_GRAINS as readonly string[]).includes(d));
      if (grains.length > 1) {
        ctx.addIssue({ code: 'custom', path: ['group_by'], message: `give at most one of ${TIME_GRAINS.join(', ')}` });
      }
      if (value.order_by !== undefined && !value.metrics?.includes(value.order_by)) {
        ctx.addIssue({ code: 'custom', path: ['order_by'], message: 'must be one of the metrics asked for' });
      }
    })
    .superRefine(checkDateRange, DATE_RANGE_ALWAYS);

  for (const q of model.questions ?? []) {
    const parsed = input.safeParse(q.arguments);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new ConfigError(
        `metrics of ${name}: the call for question ${JSON.stringify(q.question)} is refused (${issue.path.join('.') || 'arguments'}: ${issue.message}); fix its arguments`,
      );
    }
  }

  const figure = z.union([z.string(), z.number(), z.null()]);
  const row = z.record(z.string(), z.union([figure, z.boolean()]));
  const output = z.object({
    ...rangeEcho,
    rows: z.array(row).max(MAX_ROWS).optional(),
    totals: z.array(row),
    truncated: z.boolean(),
    comparison: z
      .object({
        compare_to: z.enum(COMPARISONS),
        start_date: z.string(),
        end_date: z.string(),
        ...cutFields,
        totals: z.array(row),
      })
      .optional(),
  });

  const columns: Record<string, ColumnSpec> = {};
  const plain = (type: ColumnSpec['type']): ColumnSpec => ({ type, source: 'computed', treatment: 'plain' });
  for (const c of selectedColumns(model)) columns[c] = plain('text');
  columns.hour_of_day = plain('integer');
  columns.weekday = plain('integer');
  for (const m of model.metrics)
    columns[m.name] = plain(m.unit === 'count' ? 'integer' : m.unit === 'money' ? 'money' : 'number');
  for (const a of model.attributes) {
    if (a.labelled) columns[`${a.name}_name`] = { type: 'text', source: a.labelled, treatment: 'plain' };
  }
  columns.is_total = plain('integer');
  columns.grand = plain('integer');
  columns.groups = plain('integer');
  const protectedFigures = model.metrics.filter((m) => m.protected).map((m) => m.name);

  const present = (
    rows: ResultRow[],
    page: { truncated: boolean },
    args: MetricsArgs,
    ctx: { timeZone: string },
  ): Record<string, unknown> => {
    const dims = args.group_by ?? [];
    const money = baseMetrics(model, args.metrics).some((n) => unitOf(n) === 'money');
    const figures = (r: ResultRow): Figures => ({
      ...(money ? { currency: r.currency } : {}),
      ...Object.fromEntries(args.metrics.map((m) => [m, r[m] ?? null])),
    });
    const totals: Figures[] = [];
    const out: Figures[] = [];
    let cut = page.truncated;
    for (const r of rows) {
      if (r.grand === 1) continue;
      if (r.is_total === 1) {
        totals.push(figures(r));
        continue;
      }
      if (Number(r.groups) > args.limit) cut = true;
      const keys: Figures = {};
      let bounds = {};
      for (const d of dims) {
        const value = r[d] ?? null;
        if (d === 'weekday') keys.weekday = WEEKDAYS[Number(value) - 1] ?? null;
        else if (d === 'hour') {
          const [local, offset] = String(value).split('|');
          const ms = Date.parse(`${local}:00Z`) - Number(offset) * 1000;
          keys.hour = isoInZone(ms, ctx.timeZone);
          const until = args.until === undefined ? undefined : Date.parse(args.until);
          if (until !== undefined && until > ms && until < ms + 3_600_000)
            bounds = { partial: true, until: isoInZone(until, ctx.timeZone) };
        } else keys[d] = value;
        if (d !== 'hour' && (TIME_GRAINS as readonly string[]).includes(d)) {
          bounds = bucketBounds(String(value), d as DayBucket, args, ctx.timeZone);
        }
        if (model.attributes.find((a) => a.name === d)?.labelled) keys[`${d}_name`] = r[`${d}_name`] ?? null;
      }
      out.push({ ...keys, ...bounds, ...figures(r) });
    }
    return {
      ...echoRange(args, ctx.timeZone),
      ...(dims.length > 0 ? { rows: out } : {}),
      totals,
      truncated: cut,
    };
  };

  const compare = (
    current: Record<string, unknown>,
    prior: Record<string, unknown>,
    comparison: ComparisonEcho,
  ): Record<string, unknown> => {
    const key = (t: Figures): string => String(t.currency ?? '');
    const before = new Map((prior.totals as Figures[]).map((t) => [key(t), t]));
    const now = new Map((current.totals as Figures[]).map((t) => [key(t), t]));
    const currencies = [...new Set([...now.keys(), ...before.keys()])].sort();
    const metrics = Object.keys((current.totals as Figures[])[0] ?? (prior.totals as Figures[])[0] ?? {}).filter(
      (k) => k !== 'currency',
    );
    const totals = currencies.map((c) => {
      const p = before.get(c);
      const n = now.get(c);
      const t: Figures = c === '' ? {} : { currency: c };
      for (const m of metrics) {
        const value = (p?.[m] ?? (p ? null : 0)) as number | null;
        t[m] = value;
        t[`${m}_change_pct`] = changeOf((n?.[m] ?? (n ? null : 0)) as number | null, value).change_pct;
      }
      return t;
    });
    return { ...current, comparison: { ...comparison, totals } };
  };

  const examples: [Record<string, unknown>, ...Record<string, unknown>[]] = [
    // Explicit days, so that the checks that call the examples find data; the description says to
    // prefer a period for relative questions.
    { metrics: [metricNames[0]], group_by: ['weekday'], start_date: '2025-03-01', end_date: '2025-03-30' },
    {
      metrics: metricNames.slice(0, 2),
      group_by: [model.attributes[0]!.name],
      start_date: '2025-03-01',
      end_date: '2025-03-31',
    },
    { metrics: [metricNames[0]], start_date: '2025-03-01', end_date: '2025-03-31', compare_to: 'previous_year' },
    ...model.metrics
      .filter((m) => m.people)
      .map((m) => ({
        metrics: [m.name],
        group_by: [model.attributes[0]!.name],
        start_date: '2025-03-01',
        end_date: '2025-03-31',
      })),
  ];

  return {
    guide: guideOf(model),
    name,
    title: `Metrics of ${model.subject}`,
    description: [
      `Metrics of ${model.subject}: totals, or by up to two dimensions, filtered, ranked and compared.`,
      `Use it for ${
        (model.questions ?? [])
          .slice(0, 1)
          .map((q) => JSON.stringify(q.question))
          .join(' or ') || 'totals and breakdowns'
      }.`,
      'Metrics and dimensions: querygate://catalog.',
    ].join(' '),
    input: input as unknown as z.ZodType<MetricsArgs>,
    examples,
    output: output as unknown as z.ZodType<Record<string, unknown>>,
    columns,
    personal,
    dimensions,
    dataScope: model.attributes.flatMap((a) => (a.scope ? [a.scope] : [])),
    ...(protectedFigures.length > 0 ? { protectedFigures } : {}),
    checkedArguments: [...checkedArguments(model), ...(model.questions ?? []).map((q) => q.arguments)],
    query: (db, args, ctx) => metricsStatement(db, model, args, ctx),
    ...(model.sources.some((s) => s.rollup)
      ? {
          baseline: () =>
            metricsTemplate({ ...model, sources: model.sources.filter((s) => !s.rollup) }, personal, dimensions),
        }
      : {}),
    present,
    compare,
  };
}
