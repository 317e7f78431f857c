/**
 * The contract suite: every template of every pack the suite serves (target.ts), each rule of
 * test/support/contract.ts
 * in a test of its own, so a new template file is covered without writing a test. A failure names the
 * rule and the fix. Then each rule is shown to fail on a template broken on purpose, and the registry's
 * refusals of a template that returns a personal column untreated or builds SQL from a string.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { sql, type SelectQueryBuilder } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explainPacks, type PlanCost } from '../src/db/doctor/index.js';
import { ConfigError } from '../src/lib/errors.js';
import { widestArguments } from '../src/lib/widest-arguments.js';
import type { Pack } from '../src/pack.js';
import {
  createRegistry,
  type AnyTemplate,
  type ColumnSpec,
  type QueryContext,
  type Registry,
  type RowQuery,
} from '../src/registry/index.js';
import {
  argumentEdgeViolations,
  bindParameterViolations,
  declaresProtectedCount,
  descriptionViolations,
  explainViolations,
  outputViolations,
  planViolations,
  returnsRows,
  rowCapViolations,
  routingViolations,
  protectedCountViolations,
  sourcesOf,
  treatmentViolations,
  registryWithThreshold,
  type Call,
  type CountRows,
  type Violation,
} from './support/contract.js';
import { TEST_SEED } from './support/database.js';
import { connectAdmin, startHarness, type Harness } from './support/harness.js';
import { ALL_PACKS } from './support/packs.js';
import { testTarget } from './support/target.js';

/** The last day of the test data: the widest calls end on it, so their ranges hold rows. */
const LAST_DAY = TEST_SEED.until;

const target = await testTarget();

const expectNone = (violations: readonly Violation[]): void => {
  expect(violations, `\n${explainViolations(violations)}\n`).toEqual([]);
};

/** The tool a template becomes, built without a database; undefined when the registry refuses it. */
function toolOf(template: AnyTemplate): Tool | undefined {
  try {
    return withWholeInput(createRegistry([template]), createRegistry([template]).tools[0]!);
  } catch {
    return undefined;
  }
}

/**
 * A listed tool with its whole input schema, which the argument rules are derived from: the listing
 * leaves the period's names to the instructions, and the server still refuses any other.
 */
function withWholeInput(registry: Registry, tool: Tool): Tool {
  return { ...tool, inputSchema: registry.argumentSchemas.get(tool.name) as Tool['inputSchema'] };
}

/** A template's whole answer schema. */
const answerOf = (template: AnyTemplate): Record<string, unknown> | undefined => {
  try {
    return createRegistry([template]).answerSchemas.get(template.name);
  } catch {
    return undefined;
  }
};

/** Counts a statement's rows through the admin connection, in UTC as the reader's connections run. */
const countWith =
  (admin: pg.Client): CountRows =>
  async ({ sql: text, parameters }, where) => {
    const filter = where ? ` where counted.${admin.escapeIdentifier(where.column)} < $${parameters.length + 1}` : '';
    const values = where ? [...parameters, where.below] : [...parameters];
    const { rows } = await admin.query<{ n: number }>(
      `select count(*)::int as n from (${text}) as counted${filter}`,
      values,
    );
    return rows[0]!.n;
  };

describe.each(target.packs.map((pack) => [pack.name, pack] as const))('contract: pack %s', (_, pack: Pack) => {
  const { lastDay } = target;
  const accepted = pack.templates.filter((t) => toolOf(t) !== undefined);
  let harness: Harness;
  let admin: pg.Client;
  let plans: PlanCost[];
  const tools = new Map<string, Tool>();
  const call: Call = (name, args) => harness.call(name, args);

  beforeAll(async () => {
    harness = await startHarness({ readerUrl: target.readerUrl(pack), templates: accepted });
    admin = await target.connectAdmin();
    const registry = createRegistry(accepted);
    for (const tool of (await harness.client.listTools()).tools) tools.set(tool.name, withWholeInput(registry, tool));
    plans = await explainPacks(harness.reader, [{ ...pack, templates: accepted }], { timeZone: 'UTC' }, lastDay);
  });
  afterAll(async () => {
    await harness?.close();
    await admin?.end();
  });

  /** The listed tool; a template the registry refuses fails every rule with the registry's message. */
  const listed = (template: AnyTemplate): Tool => {
    const tool = tools.get(template.name);
    if (!tool) throw new Error(`\n${explainViolations(treatmentViolations(pack, template))}\n`);
    return tool;
  };

  it('contract: tools/list through a real client lists every template of the pack, in order', () => {
    expect([...tools.keys()]).toEqual(pack.templates.map((t) => t.name));
  });

  describe.each(pack.templates.map((t) => [t.name, t] as const))('%s', (_, template: AnyTemplate) => {
    const shape = toolOf(template);

    it('contract: the description is long enough to choose by (120+ characters, when to use it, an example)', () => {
      expectNone(descriptionViolations(template, listed(template)));
    });

    it('contract: argument edges are refused through a real client, naming the field and the rule', async () => {
      expectNone(await argumentEdgeViolations(call, template, listed(template)));
    });

    it('contract: every personal column has a treatment', () => {
      expectNone(treatmentViolations(pack, template));
    });

    it('contract: every input value reaches the compiled SQL as a bind parameter, never in its text', () => {
      expectNone(bindParameterViolations(template, listed(template)));
    });

    if (shape === undefined || returnsRows(answerOf(template))) {
      it('contract: the row cap and truncated are right over the widest range (rows counted through the admin connection)', async () => {
        expectNone(await rowCapViolations(call, countWith(admin), template, listed(template), lastDay));
      });
    }

    it("contract: EXPLAIN over the widest allowed arguments stays under the pack's maxPlanCost", () => {
      listed(template);
      expectNone(plans.filter((p) => p.tool === template.name).flatMap(planViolations));
    });

    const baseline = template.baseline;
    if (baseline) {
      it('contract: every routing answers as the base rows do (a rollup that disagrees fails)', async () => {
        const base = await startHarness({ readerUrl: target.readerUrl(pack), templates: [baseline()] });
        try {
          expectNone(await routingViolations(call, (name, args) => base.call(name, args), template));
        } finally {
          await base.close();
        }
      });
    }

    it('contract: results of its examples and widest calls validate against the listed outputSchema and the whole answer schema', async () => {
      const tool = listed(template);
      const answer = createRegistry([template]).answerSchemas.get(template.name)!;
      const calls = [
        ...template.examples.map((args, i) => [`example ${i + 1} ${JSON.stringify(args)}`, args] as const),
        ...widestArguments(template, lastDay).map((args) => [`widest ${JSON.stringify(args)}`, args] as const),
      ];
      const found: Violation[] = [];
      for (const [label, args] of calls) {
        found.push(
          ...outputViolations(
            template,
            tool,
            label,
            await call(template.name, args as Record<string, unknown>),
            answer,
          ),
        );
      }
      expectNone(found);
    });

    if (declaresProtectedCount(template)) {
      it('contract: protected counts of people are released, never 1 to threshold - 1', async () => {
        listed(template);
        const servers = new Map<number, Harness>();
        try {
          const callAt = async (k: number, args: Record<string, unknown>) => {
            if (!servers.has(k))
              servers.set(
                k,
                await startHarness({ readerUrl: target.readerUrl(pack), registry: registryWithThreshold(accepted, k) }),
              );
            return servers.get(k)!.call(template.name, args);
          };
          expectNone(await protectedCountViolations(callAt, template));
        } finally {
          for (const server of servers.values()) await server.close();
        }
      });
    }
  });
});

// The project's own packs must exercise every rule; a pack of yours (QUERYGATE_PACKS) need not group people.
describe.skipIf(target.own)('contract: over all packs', () => {
  it('at least one template releases a protected count, so the rule is checked at all', () => {
    const counting = ALL_PACKS.flatMap((p) =>
      p.templates.filter(declaresProtectedCount).map((t) => `${p.name}/${t.name}`),
    );
    expect(
      counting,
      'no template of any pack releases a protected count: the protected-counts rule would pass having checked nothing',
    ).not.toEqual([]);
  });

  it('every tool name is unique across the packs', () => {
    const names = ALL_PACKS.flatMap((p) => p.templates.map((t) => t.name));
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------
// Templates broken on purpose. They are built from the packs' own templates, so they stay valid
// Kysely over real tables; what each breaks is one rule.

const pack = ALL_PACKS[0]!;
const byName = (predicate: (t: AnyTemplate, tool: Tool) => boolean): AnyTemplate => {
  const found = pack.templates.find((t) => predicate(t, toolOf(t)!));
  if (!found) throw new Error(`pack ${pack.name} has no template for this check`);
  return found;
};
const ranged = byName((_, tool) => 'start_date' in (tool.inputSchema.properties ?? {}));
const capped = byName((t) => returnsRows(answerOf(t)) && t.rowLimit !== undefined);
/** A column of a personal source with its mask, which the checks below take away. */
const maskedColumn = (t: AnyTemplate): [string, ColumnSpec] | undefined =>
  Object.entries(t.columns).find(
    ([, c]) => sourcesOf(c).some((s) => s in pack.personalColumns) && !['plain', 'drop'].includes(String(c.treatment)),
  );
const personal = byName((t) => maskedColumn(t) !== undefined);

/** The template's query with one more WHERE condition, written as SQL text. */
function withRawCondition(template: AnyTemplate, name: string, condition: (args: Record<string, string>) => string) {
  return {
    ...template,
    name,
    query: (db: never, args: Record<string, string>, ctx: QueryContext): RowQuery =>
      (template.query(db, args, ctx) as unknown as SelectQueryBuilder<never, never, object>).where(
        sql.raw<boolean>(condition(args)),
      ),
  } as AnyTemplate;
}

/** `sql.raw` of an argument in a template string, and of a string concatenation. */
const stringBuilt = [
  withRawCondition(ranged, 'query_raw_template_string', (args) => `'${args.start_date}'::date is not null`),
  withRawCondition(ranged, 'query_raw_concatenation', (args) => "'" + args.end_date + "'::date is not null"),
];

describe('contract: each rule fails on a template that breaks it', () => {
  it('description: a short one that does not say when to use the tool', () => {
    const tool = toolOf(ranged)!;
    const short = { ...ranged, description: 'Counts things in a range.' };
    const rules = descriptionViolations(short, tool).map((v) => v.message);
    expect(rules).toEqual([
      expect.stringMatching(/has 25 characters; a model needs at least 120/),
      expect.stringMatching(/does not say when to use the tool/),
    ]);
  });

  it('argument edges: a server that accepts everything, and one whose refusals name no field', async () => {
    const tool = toolOf(ranged)!;
    const accepting: Call = async () => ({ content: [{ type: 'text', text: '{}' }], structuredContent: {} });
    const vague: Call = async () => ({ isError: true, content: [{ type: 'text', text: 'Invalid arguments.' }] });
    const accepted = await argumentEdgeViolations(accepting, ranged, tool);
    expect(accepted.map((v) => v.message)).toContainEqual(
      expect.stringMatching(/^a range of 91 days .* was accepted$/),
    );
    expect(accepted.map((v) => v.message)).toContainEqual(
      expect.stringMatching(/^an unknown argument .* was accepted$/),
    );
    const unnamed = await argumentEdgeViolations(vague, ranged, tool);
    expect(unnamed.length).toBe(accepted.length);
    expect(unnamed[0]!.message).toMatch(/was refused without naming end_date/);
  });

  it('personal columns: a personal column whose treatment was left out', () => {
    const [alias, column] = maskedColumn(personal)!;
    const { treatment: _treatment, ...bare } = column;
    const broken = { ...personal, columns: { ...personal.columns, [alias]: bare } } as AnyTemplate;
    const messages = treatmentViolations(pack, broken).map((v) => v.message);
    expect(messages).toContainEqual(expect.stringMatching(new RegExp(`^the registry refuses it: .*${alias}`)));
    expect(messages).toContainEqual(expect.stringMatching(new RegExp(`^column ${alias} comes from personal column`)));
  });

  it.each(stringBuilt.map((t) => [t.name, t] as const))(
    'bind parameters: %s puts an argument into the SQL text',
    (_, template) => {
      const messages = bindParameterViolations(template, toolOf(ranged)!).map((v) => v.message);
      expect(messages).toContainEqual(expect.stringMatching(/ is written into the SQL text /));
    },
  );

  it('row cap: a template that never says truncated, and one whose rowLimit ignores the limit asked for', async () => {
    const untruncated = {
      ...capped,
      name: 'query_never_truncated',
      present: (rows, _page, args, ctx) => capped.present(rows, { truncated: false }, args, ctx),
    } satisfies AnyTemplate;
    const uncapped = { ...capped, name: 'query_limit_ignored', rowLimit: () => 100 } satisfies AnyTemplate;
    const harness = await startHarness({ templates: [untruncated, uncapped] });
    const admin = await connectAdmin();
    try {
      await admin.query("set time zone 'UTC'");
      const [untruncatedTool, uncappedTool] = (await harness.client.listTools()).tools;
      const call: Call = (name, args) => harness.call(name, args);
      const never = await rowCapViolations(call, countWith(admin), untruncated, untruncatedTool!, LAST_DAY);
      expect(never.map((v) => v.message)).toContainEqual(expect.stringMatching(/says truncated: false/));
      const ignored = await rowCapViolations(call, countWith(admin), uncapped, uncappedTool!, LAST_DAY);
      expect(ignored.map((v) => v.message)).toContainEqual(expect.stringMatching(/with limit 3 returned \d+ rows$/));
    } finally {
      await harness.close();
      await admin.end();
    }
  });

  it('plan cost: a pack whose ceiling is below every plan', async () => {
    const harness = await startHarness({ templates: pack.templates });
    try {
      const plans = await explainPacks(harness.reader, [{ ...pack, maxPlanCost: 1 }], { timeZone: 'UTC' }, LAST_DAY);
      const messages = plans.flatMap(planViolations).map((v) => v.message);
      expect(messages.length).toBe(pack.templates.length);
      expect(messages[0]).toMatch(/above the pack's maxPlanCost 1$/);
    } finally {
      await harness.close();
    }
  });

  it('output schema: a result that leaves out a declared field, one whose rows break the answer schema, and a failed call', () => {
    const tool = toolOf(ranged)!;
    // The listing outlines the answer without a required list; the whole answer schema keeps it.
    expect(tool.outputSchema!.required).toBeUndefined();
    const whole = { type: 'object', required: ['rows', 'row_count'] };
    const missing = outputViolations(
      ranged,
      tool,
      'a call',
      { content: [], structuredContent: { row_count: 1 } },
      whole,
    );
    expect(missing.map((v) => v.message)).toEqual([
      expect.stringMatching(/breaks its answer schema: .*must have required property 'rows'/),
    ]);
    // What the outline lets through, the whole answer schema it outlines still refuses.
    const outlined = { ...tool, outputSchema: { type: 'object' as const } };
    const answer = { type: 'object', properties: { rows: { type: 'array', items: { required: ['currency'] } } } };
    const broken = outputViolations(
      ranged,
      outlined,
      'a call',
      { content: [], structuredContent: { rows: [{}] } },
      answer,
    );
    expect(broken.map((v) => v.message)).toEqual([expect.stringMatching(/breaks its answer schema: .*currency/)]);
    const failed = outputViolations(ranged, tool, 'a call', {
      isError: true,
      content: [{ type: 'text', text: 'boom' }],
    });
    expect(failed[0]?.message).toBe('a call failed: boom');
  });

  it('protected counts: a server that returns a count below the threshold', async () => {
    const counted = { ...ranged, protectedFigures: ['people'] } as AnyTemplate;
    const exact = async () => ({ content: [], structuredContent: { rows: [{ people: 3 }, { people: 0 }] } });
    const messages = (await protectedCountViolations(exact, counted)).map((v) => v.message);
    expect(messages).toContainEqual(expect.stringMatching(/at threshold 5 returned people of 3, below the threshold$/));
    const none = async () => ({ content: [], structuredContent: { rows: [{}] } });
    expect((await protectedCountViolations(none, counted)).map((v) => v.message)).toContain(
      'no example returns a protected count, so its release was never seen',
    );
  });
});

describe('contract: the registry refuses a template that breaks it, with a message that says so', () => {
  it('a template that selects a personal column without a treatment', () => {
    const [alias, column] = maskedColumn(personal)!;
    const { treatment: _treatment, ...bare } = column;
    const broken = { ...personal, columns: { ...personal.columns, [alias]: bare } } as AnyTemplate;
    let message = '';
    try {
      createRegistry([broken]);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    console.info(`refused: ${message}`);
    expect(message).toMatch(new RegExp(`^template ${personal.name}: column ${alias} .*(mask|treatment)`));
  });

  it.each(stringBuilt.map((t) => [t.name, t] as const))(
    'a template that builds SQL from a string (%s)',
    (_, template) => {
      let message = '';
      try {
        createRegistry([template]);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        message = (err as Error).message;
      }
      console.info(`refused: ${message || '(not refused)'}`);
      expect(message).toMatch(new RegExp(`^template ${template.name}: .*(start_date|end_date|bind parameter)`));
    },
  );
});
