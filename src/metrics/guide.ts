/** What querygate://catalog says under `query_metrics`: its metrics, dimensions, filters and example calls. */
import { TIME_GRAINS, type MetricsModel } from './declarations.js';

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
  out.push(
    '',
    'Rows come per currency when a money metric is asked for. `totals` holds the exact totals of every matching row (not of the listed rows); `limit` cuts the rows of each currency, not the totals.',
  );
  if ((model.questions ?? []).length > 0) {
    out.push('', '### Example calls', '', '| question | arguments |', '| --- | --- |');
    for (const q of model.questions!) out.push(`| ${q.question} | \`${JSON.stringify(q.arguments)}\` |`);
  }
  return out.join('\n');
}
