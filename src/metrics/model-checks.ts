/**
 * The start-up checks of a metrics model: each mistake a pack author can make in its declarations is
 * refused in one line that names the declaration, the field and the fix, before anything is served.
 */
import { createCompiler } from '../db/connect.js';
import { ConfigError } from '../lib/errors.js';
import { descriptionProblem } from '../lib/descriptions.js';
import { factOf, factsOf } from './call.js';
import type { PersonalColumn, PersonalColumns } from '../registry/types.js';
import {
  CYCLIC_TIMES,
  MAX_LISTED_VALUES,
  TIME_GRAINS,
  type AttributeDeclaration,
  type Measure,
  type MetricSource,
  type MetricsModel,
} from './declarations.js';

/**
 * The entities the pack's classification names people by: those whose internal id sits beside a name,
 * an email or a phone number in one relation (a customer, a requester; not an order or a product).
 */
function personEntities(personal: PersonalColumns): Set<string> {
  const relationOf = (column: string): string => column.slice(0, column.lastIndexOf('.'));
  const entries = Object.entries(personal).filter(([, c]) => c !== undefined) as [string, PersonalColumn][];
  const withPeople = new Set(entries.filter(([, c]) => c.kind !== 'internal_id').map(([name]) => relationOf(name)));
  return new Set(
    entries
      .filter(([name, c]) => c.kind === 'internal_id' && c.entity !== undefined && withPeople.has(relationOf(name)))
      .map(([, c]) => c.entity!),
  );
}

/** The relations a source's rows read, by alias: `"schema"."table" as "t"` in its compiled FROM gives t. */
function relationsByAlias(source: MetricSource): Map<string, string> {
  const text = source.rows(createCompiler()).selectAll().compile().sql;
  return new Map([...text.matchAll(/"([^"]+)"\."([^"]+)" as "([^"]+)"/g)].map((m) => [m[3]!, `${m[1]}.${m[2]}`]));
}

/**
 * The person's column a distinct count reads, as `<relation>.<column>`, or undefined: its `of` (a
 * reference such as 'u.user_id'), where the pack classifies it a person's (an id of a person entity,
 * see personEntities) or a source of the model names it as its people column.
 */
function personColumnOf(
  model: MetricsModel,
  source: MetricSource,
  measure: Measure,
  personal: PersonalColumns,
  people: ReadonlySet<string>,
): string | undefined {
  if (measure.aggregate !== 'count_distinct' || typeof measure.of !== 'string') return undefined;
  const dot = measure.of.lastIndexOf('.');
  const relation = relationsByAlias(source).get(measure.of.slice(0, dot));
  if (relation === undefined) return undefined;
  const name = `${relation}.${measure.of.slice(dot + 1)}`;
  const entity = (personal as Readonly<Record<string, PersonalColumn | undefined>>)[name]?.entity;
  const named = model.sources.some((s) => s.people === measure.of);
  return (entity !== undefined && people.has(entity)) || named ? name : undefined;
}

/** Refuses a model the compiler cannot serve, in one line with the fix. */
export function checkModel(model: MetricsModel, personal: PersonalColumns, tool: string): void {
  const where = `metrics of ${tool}`;
  const people = personEntities(personal);
  if (model.toolName !== undefined && !/^query_[a-z0-9_]+$/.test(model.toolName)) {
    throw new ConfigError(`${where}: toolName must be snake_case and start with query_`);
  }
  const names = new Set<string>();
  for (const n of [...model.metrics.map((m) => m.name), ...model.attributes.map((a) => a.name)]) {
    if (!/^[a-z][a-z0-9_]*$/.test(n)) throw new ConfigError(`${where}: name ${JSON.stringify(n)} must be snake_case`);
    const labels = model.attributes.filter((a) => a.labelled !== undefined).map((a) => `${a.name}_name`);
    if (names.has(n) || [...TIME_GRAINS, ...CYCLIC_TIMES, 'currency', ...labels].includes(n as never)) {
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
    const problem = descriptionProblem(m.description, 'what the figure counts or sums, and over which rows');
    if (problem) throw new ConfigError(`${where}: metric ${m.name}: ${problem}`);
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
  const base = model.sources.filter((s) => !s.rollup && s.timeGrain === undefined);
  if (base.length === 0) throw new ConfigError(`${where}: declare at least one source (the base views)`);
  for (const s of model.sources) {
    if (Object.keys(s.measures).length === 0) {
      throw new ConfigError(`${where}: source ${s.name} measures nothing; give it measures, or remove it`);
    }
  }
  // A ratio is computed from its parts over the same rows: both parts of one fact table.
  const facts = factsOf(model);
  for (const m of model.metrics.filter((x) => x.ratio)) {
    const [a, b] = m.ratio!;
    if (factOf(model, a, facts) !== factOf(model, b, facts)) {
      throw new ConfigError(
        `${where}: ratio ${m.name} divides ${a} by ${b}, which are measured on different fact tables; a ratio's parts are counted over the same rows`,
      );
    }
  }
  for (const s of model.sources.filter((x) => x.until !== undefined)) {
    if (s.rollup || s.timeGrain !== undefined) {
      throw new ConfigError(
        `${where}: source ${s.name} is a stock (until), so it is base rows; remove its rollup and timeGrain`,
      );
    }
    if (Object.keys(s.entities ?? {}).length > 0) {
      throw new ConfigError(
        `${where}: source ${s.name} is a stock (until), so it names no entity (its rows repeat at every instant measured); remove its entities`,
      );
    }
  }
  for (const m of model.metrics.filter((x) => !x.ratio)) {
    const percentile = model.sources.some((s) => s.measures[m.name]?.aggregate === 'percentile');
    if (percentile && !model.sources.some((s) => s.timeGrain === undefined && m.name in s.measures)) {
      throw new ConfigError(
        `${where}: percentile ${m.name} must be measured by a source of base rows (one row per unit)`,
      );
    }
    for (const s of model.sources) {
      const f = s.measures[m.name]?.fraction;
      if (s.measures[m.name]?.aggregate === 'percentile' && !(typeof f === 'number' && f > 0 && f < 1)) {
        throw new ConfigError(
          `${where}: ${m.name} on source ${s.name} is a percentile: give it a fraction between 0 and 1 (0.5 for the median)`,
        );
      }
    }
    // Base rows serve every call a rollup cannot: each metric is measured on the base rows of its
    // fact table (a model may have several: invoices, subscriptions), a percentile included.
    if (!base.some((s) => m.name in s.measures)) {
      throw new ConfigError(
        `${where}: metric ${m.name} is measured by no source of base rows; add it to the measures of the base source of its fact table (${base.map((s) => s.name).join(' or ')})`,
      );
    }
    const stock = model.sources.filter((s) => s.until !== undefined && m.name in s.measures);
    const flow = model.sources.filter((s) => s.until === undefined && m.name in s.measures);
    if (stock.length > 0 && flow.length > 0) {
      throw new ConfigError(
        `${where}: metric ${m.name} is measured as a stock on source ${stock[0]!.name} and as a flow on source ${flow[0]!.name}; measure it on sources of one kind (with until, or without)`,
      );
    }
    if (!m.people) {
      for (const s of model.sources.filter((x) => x.measures[m.name] !== undefined)) {
        const person = personColumnOf(model, s, s.measures[m.name]!, personal, people);
        if (person !== undefined) {
          throw new ConfigError(
            `${where}: metric ${m.name} counts distinct ${person} on source ${s.name}, a person's column, so it counts people: declare people: true (and protected: true where a small group must not be told apart)`,
          );
        }
      }
    }
    if (m.protected && (!m.people || m.unit !== 'count')) {
      throw new ConfigError(
        `${where}: ${m.name} is protected, so it must be a count of people (people: true, unit count)`,
      );
    }
    const unnamed = model.sources.find((s) => m.name in s.measures && s.people === undefined);
    if (m.protected && unnamed !== undefined) {
      throw new ConfigError(`${where}: ${m.name} is protected, so source ${unnamed.name} must name its people column`);
    }
  }
  for (const a of model.amounts ?? []) {
    if (!model.sources.some((s) => a.name in (s.amounts ?? {}))) {
      throw new ConfigError(
        `${where}: amount ${a.name} is carried by no source; name its column in a source's amounts`,
      );
    }
    if (a.bands.some((e, i) => i > 0 && e <= a.bands[i - 1]!)) {
      throw new ConfigError(`${where}: amount ${a.name}: its bands must be ascending`);
    }
  }
  for (const e of model.entities ?? []) {
    if (!model.sources.some((s) => e.name in (s.entities ?? {}))) {
      throw new ConfigError(
        `${where}: entity ${e.name} is named by no source; name its id column in a source's entities`,
      );
    }
    if (!(e.id in personal)) {
      throw new ConfigError(
        `${where}: entity ${e.name}'s id ${e.id} must be declared personal (an internal_id), so it leaves only as a token`,
      );
    }
  }
  const described: [string, { description: string }, string][] = [
    ...model.attributes.map((a): [string, { description: string }, string] => [
      `attribute ${a.name}`,
      a,
      'what its values are',
    ]),
    ...(model.amounts ?? []).map((a): [string, { description: string }, string] => [
      `amount ${a.name}`,
      a,
      'what the amount is, in which currency',
    ]),
    ...(model.entities ?? []).map((e): [string, { description: string }, string] => [
      `entity ${e.name}`,
      e,
      'who or what it is, and how a caller sees it',
    ]),
  ];
  for (const [what, declaration, fix] of described) {
    const problem = descriptionProblem(declaration.description, fix);
    if (problem) throw new ConfigError(`${where}: ${what}: ${problem}`);
  }
  for (const a of model.attributes) checkAttributeValues(a, where);
  for (const a of model.attributes) {
    if (!base.some((s) => a.name in s.attributes)) {
      throw new ConfigError(
        `${where}: attribute ${a.name} is carried by no source of base rows; add it to the attributes of the base source of its fact table`,
      );
    }
  }
  // A personal column as an attribute is refused by the registry's selection check: dimensions are
  // declared plain, and a personal source selected plain fails start-up.
}

/** Values with a space, as free text has: an identifier's pattern accepts none of them. */
const SPACED = ['a b', 'A B', '1 2', 'Acme Corp', 'ACME CORP', 'a-b c'];

/** What an attribute's values may be declared as, in the words of its refusals. */
const VALUES_FIX =
  "declare values (a closed list), valuesFrom: { column, atMost } (labels such as categories, counted at start-up), identifier: { pattern, example } (a code such as a SKU) or scope (the caller's data scope); free text is no attribute";

/**
 * Refuses an attribute whose values are unbounded: one declared by none of a closed list, a counted
 * list of labels, an identifier's pattern or a data scope would let a model group or filter by free
 * text (a company's name), listing or singling out whoever wrote it.
 */
function checkAttributeValues(a: AttributeDeclaration, where: string): void {
  const at = `${where}: attribute ${a.name}`;
  if (a.values === undefined && a.valuesFrom === undefined && a.identifier === undefined && a.scope === undefined) {
    throw new ConfigError(`${at}: its values are not bounded; ${VALUES_FIX}`);
  }
  if (a.valuesFrom !== undefined) {
    const { column, atMost } = a.valuesFrom;
    if (!/^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$/.test(column)) {
      throw new ConfigError(`${at}: valuesFrom.column ${JSON.stringify(column)} must be "schema.view.column"`);
    }
    if (!Number.isInteger(atMost) || atMost < 1 || atMost > MAX_LISTED_VALUES) {
      throw new ConfigError(
        `${at}: valuesFrom.atMost must be a whole number from 1 to ${MAX_LISTED_VALUES}; more values than that are an identifier (identifier: { pattern, example }) or free text`,
      );
    }
  }
  if (a.identifier !== undefined) {
    const { pattern } = a.identifier;
    let compiled: RegExp | undefined;
    try {
      compiled = new RegExp(pattern);
    } catch {
      compiled = undefined;
    }
    if (compiled === undefined || !pattern.startsWith('^') || !pattern.endsWith('$')) {
      throw new ConfigError(
        `${at}: identifier.pattern ${JSON.stringify(pattern)} must be a regular expression anchored with ^ and $ (^[A-Z0-9-]{1,40}$, say)`,
      );
    }
    if (compiled.test('') || SPACED.some((v) => compiled.test(v))) {
      throw new ConfigError(
        `${at}: identifier.pattern ${JSON.stringify(pattern)} accepts nothing or a space, so it is free text; an identifier is a code (^[A-Z0-9-]{1,40}$, say), else ${VALUES_FIX}`,
      );
    }
    if (!compiled.test(a.identifier.example ?? '')) {
      throw new ConfigError(
        `${at}: identifier.example ${JSON.stringify(a.identifier.example)} must match its pattern: give one real value (a SKU), which the start-up checks filter by`,
      );
    }
  }
}
