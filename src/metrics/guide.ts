/** What querygate://catalog says under `query_metrics`: its metrics, dimensions, filters and example calls. */
import { TIME_GRAINS, type MetricsModel } from './declarations.js';
import { bandLabels, ENTITY_COUNTS } from './statement.js';

/** The catalog's section on the tool: every metric, dimension and filter, and a call per common question. */
export function guideOf(model: MetricsModel): string {
  const out = ['### Metrics', '', '| metric | unit | meaning |', '| --- | --- | --- |'];
  for (const m of model.metrics) {
    const unit = m.unit === 'money' ? 'money, per currency' : m.unit;
    const ratio = m.ratio ? ` Computed as ${m.ratio[0]} / ${m.ratio[1]} over the same rows.` : '';
    const people = m.people ? ' Counts people: groups of too few are hidden from every figure of the answer.' : '';
    out.push(`| \`${m.name}\` | ${unit} | ${m.description}${ratio}${people} |`);
  }
  out.push(
    '',
    '### Dimensions (`group_by`, at most two, at most one time bucket)',
    '',
    `- Time buckets in the reporting time zone: ${TIME_GRAINS.map((g) => `\`${g}\``).join(', ')}. Rows are labelled by the bucket's first day (\`hour\`: its first instant, with the offset); a bucket the range covers in part says \`partial\` with \`first_day\` and \`last_day\`.`,
    '- Cyclic: `hour_of_day` (0-23, local), `weekday` (Monday first).',
  );
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
        )} (lower edge included). Bound it with \`min_${a.name}\` (at least) and \`max_${a.name}\` (below), numbers in each row's own currency; answers that read it are per currency.`,
    );
  }
  for (const e of model.entities ?? []) {
    const n = `${e.name}_${e.history.counts}`;
    out.push(
      `- \`${e.name}\`: ${e.description} Top ${e.name}s: group by it with \`order_by\` and \`limit\`. No filter.`,
      `- \`${n}\`: how many ${e.history.counts} the ${e.name} placed in the range, whatever the filters: ${ENTITY_COUNTS.map((c) => `\`${c}\``).join(', ')}.`,
      `- \`${e.name}_type\`: \`one_time\` (one of its ${e.history.counts} in the range) or \`repeat\` (more). Filter: \`"filters": {"${e.name}_type": ["repeat"]}\`.`,
      `- \`${e.name}_since\`: \`new\` when its first ${e.history.counts.replace(/s$/, '')} ever (all history, not only the range) falls in the range, else \`returning\`. Filter: \`"filters": {"${e.name}_since": ["new"]}\`.`,
    );
  }
  out.push(
    '',
    'Rows come per currency when a money metric is asked for. `totals` holds the exact totals of every matching row (not of the listed rows); `limit` cuts the rows of each currency, not the totals (at most 100 rows in all). With `compare_to`, every row and total carries `<metric>_prior` (totals: the prior figure under the metric name) and `<metric>_change_pct`; a group that fell to zero is listed with zeros. A metric measured per unit (a percentile) cannot be grouped by what belongs to its parts: the call is refused with the fields named.',
  );
  if ((model.questions ?? []).length > 0) {
    out.push('', '### Example calls', '', '| question | arguments |', '| --- | --- |');
    for (const q of model.questions!) out.push(`| ${q.question} | \`${JSON.stringify(q.arguments)}\` |`);
  }
  return out.join('\n');
}
