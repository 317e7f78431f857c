/**
 * What querygate://catalog says under a metrics tool (`guideOf`: every metric, dimension and filter,
 * and a call per common question), and the page of one metric (`pagesOf`), which the tool's
 * description points to so that a model reads one metric's page rather than the whole catalog.
 */
import { TIME_GRAINS, type MetricsModel } from './declarations.js';
import { bandLabels, baseMetrics, ENTITY_COUNTS, factsOf, isStock, metricsOfFact } from './call.js';

type Metric = MetricsModel['metrics'][number];

/** The catalog's section on the tool: every metric, dimension and filter, and a call per common question. */
export function guideOf(model: MetricsModel): string {
  const out = ['### Metrics', '', '| metric | unit | meaning |', '| --- | --- | --- |'];
  for (const m of model.metrics) out.push(metricRow(model, m));
  out.push('', ...dimensions(model));
  out.push(...examples(model.questions ?? []));
  return out.join('\n');
}

/**
 * One Markdown page per metric, by name: its meaning, the dimensions and filters it goes by, and the
 * example calls that ask for it. Served as querygate://catalog/{tool}/{metric} (src/content/docs.ts).
 */
export function pagesOf(model: MetricsModel): Readonly<Record<string, string>> {
  return Object.fromEntries(
    model.metrics.map((m) => {
      const asked = (model.questions ?? []).filter((q) => (q.arguments.metrics as unknown[]).includes(m.name));
      const questions =
        asked.length > 0
          ? asked
          : [{ question: `${m.name} over the last 30 days`, arguments: { metrics: [m.name], period: 'last_30_days' } }];
      const page = [
        `# ${m.name}`,
        '',
        '| metric | unit | meaning |',
        '| --- | --- | --- |',
        metricRow(model, m),
        '',
        ...dimensions(model),
        ...examples(questions),
      ];
      return [m.name, `${page.join('\n')}\n`];
    }),
  );
}

function metricRow(model: MetricsModel, m: Metric): string {
  const unit = m.unit === 'money' ? 'money, per currency' : m.unit;
  const ratio = m.ratio ? ` Computed as ${m.ratio[0]} / ${m.ratio[1]} over the same rows.` : '';
  const people = m.people ? ' Counts people: groups of too few are hidden from every figure of the answer.' : '';
  const stock = baseMetrics(model, [m.name]).some((n) => isStock(model, n))
    ? " A stock: as of the end of each time bucket (day at the finest), or of the range; in a range that has not ended, as of the newest data. Its total is as of the range's end, never a sum over time."
    : '';
  return `| \`${m.name}\` | ${unit} | ${m.description}${ratio}${people}${stock} |`;
}

/** Where a model has several fact tables: which metrics each measures, and which attributes each carries. */
function factsLine(model: MetricsModel): string[] {
  const facts = factsOf(model);
  if (facts.length < 2) return [];
  const each = facts.map((f) => {
    const attributes = model.attributes
      .filter((a) => f.some((s) => a.name in s.attributes))
      .map((a) => `\`${a.name}\``);
    return `${f.at(-1)!.name}: ${metricsOfFact(model, f)
      .map((n) => `\`${n}\``)
      .join(', ')} (by ${attributes.join(', ') || 'time only'})`;
  });
  return [`- One call reads one fact table; ask for metrics of two in separate calls. ${each.join('; ')}.`];
}

function dimensions(model: MetricsModel): string[] {
  const out = [
    '### Dimensions (`group_by`, at most two, at most one time bucket)',
    '',
    `- Time buckets in the reporting time zone: ${TIME_GRAINS.map((g) => `\`${g}\``).join(', ')}. Rows are labelled by the bucket's first day (\`hour\`: its first instant, with the offset); a bucket the range covers in part says \`partial\` with \`first_day\` and \`last_day\`.`,
    '- Cyclic: `hour_of_day` (0-23, local), `weekday` (Monday first).',
    ...factsLine(model),
  ];
  for (const a of model.attributes) {
    const values = a.values ? ` Values: ${a.values.map((v) => `\`${v}\``).join(', ')}.` : '';
    const scope = a.scope ? ' A caller scoped on it sees only its own values.' : '';
    out.push(`- \`${a.name}\`: ${a.description}${values}${scope} Filter: \`"filters": {"${a.name}": [...]}\`.`);
  }
  for (const a of model.amounts ?? []) {
    out.push(
      `- \`${a.name}_band\`: ${a.description} Bands: ${bandLabels(a.bands)
        .map((b) => `\`${b}\``)
        .join(
          ', ',
        )} (lower edge included). Bound an amount with \`min_${a.name}\` (at least) and \`max_${a.name}\` (below), numbers in each row's own currency; answers that read it are per currency.`,
    );
  }
  for (const e of model.entities ?? []) {
    const n = `${e.name}_${e.history.counts}`;
    out.push(
      `- \`${e.name}\`: ${e.description} Top ${e.name}s: group by it with \`order_by\` and \`limit\`.`,
      `- \`${n}\`: how many of the call's ${e.history.counts} (range, filters, scope) are the ${e.name}'s: ${ENTITY_COUNTS.map((c) => `\`${c}\``).join(', ')}.`,
      `- \`${e.name}_type\`: \`one_time\` (one of the call's ${e.history.counts}) or \`repeat\` (more).`,
      `- \`${e.name}_since\`: \`new\` when its first ${e.history.counts.replace(/s$/, '')} ever (all history, not only the range) falls in the range, else \`returning\`.`,
    );
  }
  out.push(
    '',
    'Rows come per currency when a money metric is asked for. `totals` holds the exact totals of every matching row (not of the listed rows); `limit` cuts the rows of each currency, not the totals (at most 100 rows in all). With `compare_to`, every row and total carries `<metric>_prior` (totals: the prior figure under the metric name) and `<metric>_change_pct`; a group that fell to zero is listed with zeros. A metric measured per unit (a percentile) cannot be grouped by what belongs to its parts: the call is refused with the fields named.',
  );
  return out;
}

function examples(questions: NonNullable<MetricsModel['questions']>): string[] {
  if (questions.length === 0) return [];
  const out = ['', '### Example calls', '', '| question | arguments |', '| --- | --- |'];
  for (const q of questions) out.push(`| ${q.question} | \`${JSON.stringify(q.arguments)}\` |`);
  return out;
}
