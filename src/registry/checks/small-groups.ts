import { ConfigError } from '../../errors.js';
import type { AnyTemplate } from '../types.js';
import type { CompiledCall } from './checked-calls.js';
import { CHECK_THRESHOLD } from './constants.js';

/**
 * A template selects at most one `distinct_people` column. One that declares `smallGroups` names a
 * person and at least one attribute, and selects one `hidden_groups` column, a computed integer; a
 * template without the rule selects none.
 */
export function assertSmallGroups(t: AnyTemplate): void {
  const where = `template ${t.name}`;
  const people = Object.entries(t.columns).filter(([, c]) => c.treatment === 'distinct_people');
  if (people.length > 1) {
    throw new ConfigError(
      `${where}: columns ${people.map(([a]) => a).join(', ')} are all distinct_people; declare one`,
    );
  }
  const hidden = Object.entries(t.columns).filter(([, c]) => c.treatment === 'hidden_groups');
  const rule = t.smallGroups;
  if (!rule) {
    if (hidden.length > 0) {
      throw new ConfigError(
        `${where}: column ${hidden[0]![0]} is hidden_groups but the template declares no smallGroups; declare smallGroups: { people, by }`,
      );
    }
    return;
  }
  if (typeof rule.people !== 'string' || rule.people === '' || !Array.isArray(rule.by) || rule.by.length === 0) {
    throw new ConfigError(
      `${where}: smallGroups must name the column of a person and at least one attribute, e.g. { people: 't.requester_id', by: ['t.team_id'] }`,
    );
  }
  if (hidden.length !== 1) {
    throw new ConfigError(
      `${where}: declares smallGroups, so it must select exactly one column with treatment hidden_groups (hiddenGroupCount()); it has ${hidden.length}`,
    );
  }
  const [alias, column] = hidden[0]!;
  if (column.type !== 'integer' || column.source !== 'computed') {
    throw new ConfigError(
      `${where}: column ${alias} is hidden_groups: declare it { type: 'integer', source: 'computed' }`,
    );
  }
}

/**
 * A `smallGroups` template keeps to its rule on every branch: the threshold, which no argument is,
 * is bound twice (visibleGroupsOnly and hiddenGroupCount).
 */
export function assertSmallGroupsKept(template: AnyTemplate, call: CompiledCall): void {
  const { ctx, branch, statement } = call;
  const where = `template ${template.name}`;
  const applies = ctx.smallGroups && (ctx.smallGroups.appliesTo?.(call.args) ?? true);
  if (applies && statement.parameters.filter((p) => p === CHECK_THRESHOLD).length < 2) {
    throw new ConfigError(
      `${where}: declares smallGroups but does not keep to it ${branch}; build every branch from visibleGroupsOnly(rows, ctx) and select hiddenGroupCount(eb, rows, ctx) (src/lib/small-groups.ts)`,
    );
  }
}
