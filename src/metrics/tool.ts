/**
 * `query_metrics`: the one tool a pack's metric declarations derive. It is a template like any other,
 * so the registry's one door (validation, read-only transaction, timeout, row cap, masking, data
 * scope, protected counts, audit) serves it; the engine only writes its contract and its statement.
 */
import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import { ConfigError } from '../lib/errors.js';
import { label, MAX_ROWS, rowLimit } from '../lib/arguments.js';
import { compareToField, COMPARISONS } from '../lib/comparison.js';
import { checkDateRange, dateRangeFields, DATE_RANGE_ALWAYS, quote, type DayBucket } from '../lib/date-range.js';
import { isoInZone, offsetAt } from '../lib/local-day.js';
import { bucketBounds, echoRange, rangeEcho } from '../lib/result-shape.js';
import { cutFields } from '../lib/running.js';
import type {
  ColumnSpec,
  DeclarationProbe,
  ComparisonEcho,
  DataScopeDimension,
  PersonalColumns,
  QueryTemplate,
  ResultRow,
} from '../registry/types.js';
import {
  CYCLIC_TIMES,
  MAX_METRICS,
  TIME_GRAINS,
  type AttributeDeclaration,
  type MetricSource,
  type MetricsModel,
} from './declarations.js';
import { checkedArguments } from './checked-arguments.js';
import { checkModel } from './model-checks.js';
import { compareAnswers } from './compare.js';
import { guideOf, pagesOf } from './guide.js';
import {
  baseMetrics,
  derivedDimensions,
  factOf,
  factsOf,
  isStock,
  metricsOfFact,
  perCurrency,
  selectedColumns,
  unservable,
  type MetricsArgs,
} from './call.js';
import { rollupAgreementProbes } from './rollup-agreement.js';
import { metricsStatement } from './statement.js';

export const METRICS_TOOL = 'query_metrics';

const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const MAX_FILTER_VALUES = 50;
/** The totals rows a statement gives beside its capped rows: one per currency (up to 10) and the grand total. */
const MAX_TOTAL_ROWS = 11;

type Figures = Record<string, string | number | boolean | null>;

/**
 * The first instant of a local hour at a given offset (seconds): its local start at that offset, or,
 * when the offset began inside the hour (a half-hour clock change, as on Lord Howe Island), the minute
 * it began, so that the label is never before every instant the row holds.
 */
function firstInstantAt(ms: number, offsetSeconds: number, timeZone: string): number {
  let at = ms;
  while (offsetAt(timeZone, at) !== offsetSeconds * 1000 && at < ms + 3_600_000) at += 60_000;
  return at < ms + 3_600_000 ? at : ms;
}

/** Builds the tool from a pack's metric declarations. */
export function metricsTemplate(
  model: MetricsModel,
  personal: PersonalColumns,
  dimensions: readonly DataScopeDimension[] = [],
): QueryTemplate<MetricsArgs, Record<string, unknown>> {
  checkModel(model, personal, model.toolName ?? METRICS_TOOL);
  const name = model.toolName ?? METRICS_TOOL;
  const metricNames = model.metrics.map((m) => m.name) as [string, ...string[]];
  const derived = derivedDimensions(model);
  const dimensionNames = [
    ...TIME_GRAINS,
    ...CYCLIC_TIMES,
    ...model.attributes.map((a) => a.name),
    ...derived.map((d) => d.name),
  ] as [string, ...string[]];
  const unitOf = (name: string): string => model.metrics.find((m) => m.name === name)!.unit;

  // The derived dimensions are for grouping (repeat buyers: group by the entity's type); min_ and
  // max_ bound an amount. Their filters would cost every model the listing's bytes for one row less.
  const filterable = model.attributes;
  // A closed list is an enum; an identifier's value must match its pattern; labels are any label.
  const valueOf = (a: AttributeDeclaration): z.ZodType<string> =>
    a.values
      ? z.enum(a.values)
      : a.identifier
        ? label.regex(new RegExp(a.identifier.pattern), { error: `must match ${a.identifier.pattern}` })
        : label;
  const filterFields = Object.fromEntries(
    filterable.map((a) => [a.name, z.array(valueOf(a)).min(1).max(MAX_FILTER_VALUES).optional()]),
  );
  const amountFields = Object.fromEntries(
    (model.amounts ?? []).flatMap((a) => [
      [`min_${a.name}`, z.number().min(0).optional()],
      [`max_${a.name}`, z.number().min(0).optional()],
    ]),
  );
  const input = z
    .strictObject({
      metrics: z
        .array(
          z.enum(metricNames, {
            error: (issue) => `${quote(issue.input)} is not a metric; the metrics are ${metricNames.join(', ')}`,
          }),
        )
        .min(1)
        .max(MAX_METRICS),
      group_by: z.array(z.enum(dimensionNames)).max(2).optional(),
      filters: z
        .strictObject(filterFields, {
          error: `is not a known filter; the filters are ${filterable.map((a) => a.name).join(', ')}`,
        })
        .optional(),
      ...amountFields,
      ...dateRangeFields,
      ...compareToField,
      // Any text in the listing: it must be a metric asked for, which the refinement below says (the
      // listing need not name every metric twice).
      order_by: z.string().optional().describe('A metric asked for, biggest first'),
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
      for (const a of model.amounts ?? []) {
        const bounds = value as Record<string, unknown>;
        const [min, max] = [bounds[`min_${a.name}`], bounds[`max_${a.name}`]] as (number | undefined)[];
        if (min !== undefined && max !== undefined && max <= min) {
          ctx.addIssue({ code: 'custom', path: [`max_${a.name}`], message: `must be above min_${a.name}` });
        }
      }
      const apart = value.metrics ? unservable(model, value as MetricsArgs) : undefined;
      if (apart !== undefined) {
        const message = [
          `${apart.metrics.join(', ') || 'these metrics'} cannot be computed with`,
          `${apart.others.join(', ') || 'each other'}: ${apart.reason ?? 'they are counted over different rows; ask in two calls'}`,
        ].join(' ');
        ctx.addIssue({ code: 'custom', path: ['metrics'], message });
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
    truncated: z.boolean().optional(),
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
  // An entity leaves as its token, never its id (the same token as the row lists give).
  for (const e of model.entities ?? []) columns[e.name] = { type: 'text', source: e.id, treatment: 'token' };
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
    const money = perCurrency(model, args);
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
      // At most 100 rows whatever the currencies; the totals come beside them.
      if (out.length >= MAX_ROWS) {
        cut = true;
        continue;
      }
      const keys: Figures = {};
      let bounds = {};
      for (const d of dims) {
        const value = r[d] ?? null;
        if (d === 'weekday') keys.weekday = WEEKDAYS[Number(value) - 1] ?? null;
        else if (d === 'hour') {
          const [local, offset] = String(value).split('|');
          const ms = firstInstantAt(Date.parse(`${local}:00Z`) - Number(offset) * 1000, Number(offset), ctx.timeZone);
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

  const compare = (current: Record<string, unknown>, prior: Record<string, unknown>, comparison: ComparisonEcho) =>
    compareAnswers(current, prior, comparison, unitOf);

  // The examples ask for metrics of one fact table (the first metric's), grouped by what it carries.
  const factOfMetric = (metric: string): MetricSource[] => factOf(model, metric) ?? factsOf(model)[0]!;
  const attributeOf = (metric: string): string =>
    (model.attributes.find((a) => factOfMetric(metric).some((s) => a.name in s.attributes)) ?? model.attributes[0]!)
      .name;
  const first = metricNames[0];
  const sameFact = metricsOfFact(model, factOfMetric(first));
  const examples: [Record<string, unknown>, ...Record<string, unknown>[]] = [
    // Explicit days, so that the checks that call the examples find data; the description says to
    // prefer a period for relative questions. A stock is measured at the end of a day at the finest.
    {
      metrics: [first],
      group_by: [baseMetrics(model, [first]).some((n) => isStock(model, n)) ? 'month' : 'weekday'],
      start_date: '2025-03-01',
      end_date: '2025-03-30',
    },
    {
      metrics: sameFact.slice(0, 2),
      group_by: [attributeOf(first)],
      start_date: '2025-03-01',
      end_date: '2025-03-31',
    },
    { metrics: [first], start_date: '2025-03-01', end_date: '2025-03-31', compare_to: 'previous_year' },
    ...model.metrics
      .filter((m) => m.people)
      .map((m) => ({
        metrics: [m.name],
        group_by: [attributeOf(m.name)],
        start_date: '2025-03-01',
        end_date: '2025-03-31',
      })),
  ];

  return {
    guide: guideOf(model),
    guidePages: { variable: 'metric', pages: pagesOf(model) },
    name,
    title: `Metrics of ${model.subject}`,
    description: [
      `Metrics of ${model.subject}: totals or by up to two dimensions, filtered, ranked, compared.`,
      `Use it for ${
        (model.questions ?? [])
          .slice(0, 1)
          .map((q) => JSON.stringify(q.question))
          .join(' or ') || 'totals and breakdowns'
      }.`,
      `A metric's meaning and example calls: querygate://catalog/${name}/{metric}.`,
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
    probes: (db) => [
      // A stock's until is an instant too: each is read as `time`, which the probe asks to be a timestamptz.
      ...model.sources.flatMap((source) =>
        [source.time, ...(source.until !== undefined ? [source.until] : [])].map((time) => ({
          declaration: `metrics of ${name}: source ${source.name}`,
          statement: source.rows(db).select(sql.ref(time).as('time')).limit(0).compile(),
          time,
        })),
      ),
      ...model.attributes.flatMap((a) => (a.valuesFrom ? [listedValuesProbe(db, name, a.name, a.valuesFrom)] : [])),
      ...rollupAgreementProbes(db, model, name),
    ],
    query: (db, args, ctx) => metricsStatement(db, model, args, ctx),
    ...(model.sources.some((s) => s.rollup)
      ? {
          baseline: () =>
            metricsTemplate({ ...model, sources: model.sources.filter((s) => !s.rollup) }, personal, dimensions),
        }
      : {}),
    present,
    compare,
    // The comparison range's every group (up to 100 a currency), so that each row listed now finds its own.
    priorArguments: (args) => ({ ...args, limit: MAX_ROWS }),
    totalRows: MAX_TOTAL_ROWS,
    ...(model.dataThrough ? { dataThrough: model.dataThrough } : {}),
  };
}

/**
 * An attribute's labels counted as the reader at start-up, up to one past the declared bound: a
 * free-text column declared as labels (a company's name) has more, and is refused.
 */
function listedValuesProbe(
  db: Kysely<unknown>,
  tool: string,
  attribute: string,
  { column, atMost }: { readonly column: string; readonly atMost: number },
): DeclarationProbe {
  const dot = column.lastIndexOf('.');
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const any = db as Kysely<any>;
  const labels = any
    .selectFrom(column.slice(0, dot))
    .select(sql.ref(column.slice(dot + 1)).as('v'))
    .distinct()
    .limit(atMost + 1)
    .as('labels');
  return {
    declaration: `metrics of ${tool}: attribute ${attribute}`,
    statement: any
      .selectFrom(labels)
      .select((eb) => eb.fn.countAll().as('n'))
      .compile(),
    atMost: {
      what: `valuesFrom ${column}`,
      count: atMost,
      fix: 'a column of more labels than that is free text or an identifier: declare identifier: { pattern, example } for a code, else drop the attribute (raise atMost only for labels that truly are that many)',
    },
  };
}
