/**
 * Small-group suppression attacked by subtraction, on the seeded support desk through a real MCP
 * client. The hidden cells (a team's tickets of one priority from fewer than 5 requesters) are found
 * here through the admin connection, on the raw `support` tables; then every grouping of the same
 * range and filters is called, with both tools that count tickets, and each subtraction that would
 * isolate a hidden cell is tried: a team over every priority minus its priorities, a priority's total
 * minus its teams, a time-grouped total minus the groups, a totals row minus its rows. None may give a
 * hidden count, every figure must count visible cells only, and all groupings' totals must agree.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { supportDeskPack } from '../../examples/support-desk/pack/index.js';
import { defineTemplate } from '../../examples/support-desk/pack/kit.js';
import { ticketsCreatedInRange } from '../../examples/support-desk/pack/range-sql.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../../src/lib/date-range.js';
import { hiddenGroupCount, visibleGroupsOnly } from '../../src/lib/small-groups.js';
import { createRegistry, type AnyTemplate } from '../../src/registry/index.js';
import { smallGroupViolations, type CountRows } from '../support/contract.js';
import { connectAdmin, startHarness, structured, type Harness } from '../support/harness.js';
import { readerUrlFor } from '../support/packs.js';

const PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;
const GROUPINGS = ['day', 'week', 'month', 'priority', 'team'] as const;
const THRESHOLD = 5;
/** Two ranges of the seeded data (in UTC) with hidden cells: urgent ones of three teams, and one team's several. */
const RANGES = [
  { start_date: '2025-03-01', end_date: '2025-05-29' },
  { start_date: '2025-05-01', end_date: '2025-05-31' },
] as const;
type Range = (typeof RANGES)[number];
type Priority = (typeof PRIORITIES)[number];

let admin: pg.Client;
let harness: Harness;

beforeAll(async () => {
  admin = await connectAdmin();
  harness = await startHarness({ readerUrl: readerUrlFor(supportDeskPack), templates: supportDeskPack.templates });
});
afterAll(async () => {
  await harness.close();
  await admin.end();
});

interface Cell {
  readonly team: string;
  readonly priority: Priority;
  readonly n: number;
  readonly people: number;
}

/** Every team-and-priority cell of a range with its tickets and distinct requesters, from the raw tables. */
async function cellsOf(range: Range): Promise<Cell[]> {
  const { rows } = await admin.query<Cell>(
    `select tm.name as team, t.priority, count(*)::int as n, count(distinct t.requester_id)::int as people
       from support.tickets t join support.teams tm on tm.id = t.team_id
      where t.created_at >= ($1::date)::timestamp at time zone 'UTC'
        and t.created_at < ($2::date + 1)::timestamp at time zone 'UTC'
      group by 1, 2`,
    [range.start_date, range.end_date],
  );
  return rows;
}

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);
const isHidden = (cell: Cell): boolean => cell.people < THRESHOLD;
const matches = (priority: Priority | undefined) => (cell: Cell) =>
  priority === undefined || cell.priority === priority;

interface Volume {
  rows: { period?: string; priority?: string; team?: string; ticket_count: number }[];
  suppressed_groups: number;
  figures_cover: string;
}
interface Times {
  all_teams: { ticket_count: number; responded_count: number; resolved_count: number };
  rows: { team: string; ticket_count: number }[];
  suppressed_groups: number;
  figures_cover: string;
}

/** Every answer of the same range: each grouping of query_ticket_volume and query_resolution_times, per filter. */
interface Answers {
  readonly volume: Map<string, Volume>;
  readonly times: Map<string, Times>;
}
const key = (priority: Priority | undefined, grouping = ''): string => `${priority ?? 'all'}|${grouping}`;

async function answersFor(range: Range): Promise<Answers> {
  const volume = new Map<string, Volume>();
  const times = new Map<string, Times>();
  for (const priority of [undefined, ...PRIORITIES]) {
    const filter = priority ? { priority } : {};
    for (const group_by of GROUPINGS) {
      const result = await harness.call('query_ticket_volume', { ...range, group_by, ...filter });
      volume.set(key(priority, group_by), structured<Volume>(result));
    }
    times.set(key(priority), structured<Times>(await harness.call('query_resolution_times', { ...range, ...filter })));
  }
  return { volume, times };
}

const total = (answer: Volume): number => sum(answer.rows.map((r) => r.ticket_count));
/** A team's figure in a by-team answer; 0 when the answer does not list it. */
const teamFigure = (answer: Volume | Times, team: string): number =>
  (answer.rows as { team?: string; ticket_count: number }[]).find((r) => r.team === team)?.ticket_count ?? 0;

const fixtures = new Map<Range, { cells: Cell[]; answers: Answers }>();
async function fixture(range: Range): Promise<{ cells: Cell[]; answers: Answers }> {
  let found = fixtures.get(range);
  if (!found) {
    found = { cells: await cellsOf(range), answers: await answersFor(range) };
    fixtures.set(range, found);
  }
  return found;
}

describe.each(RANGES)('small groups over $start_date to $end_date', (range) => {
  it('the test data holds hidden cells, some of them in a team that is visible over every priority', async () => {
    const { cells } = await fixture(range);
    const hidden = cells.filter(isHidden);
    expect(hidden.length).toBeGreaterThan(0);
    const teamPeople = async (team: string): Promise<number> =>
      (
        await admin.query<{ p: number }>(
          `select count(distinct t.requester_id)::int as p from support.tickets t join support.teams tm on tm.id = t.team_id
            where tm.name = $3 and t.created_at >= ($1::date)::timestamp at time zone 'UTC'
              and t.created_at < ($2::date + 1)::timestamp at time zone 'UTC'`,
          [range.start_date, range.end_date, team],
        )
      ).rows[0]!.p;
    // A team that stands for enough people as a whole, with a hidden cell: the two-attribute attack's target.
    const targets = [];
    for (const cell of hidden) if ((await teamPeople(cell.team)) >= THRESHOLD) targets.push(cell);
    expect(targets.length).toBeGreaterThan(0);
  });

  it('19.2.2 every grouping of the same range and filters adds up to the same total, that of the visible cells', async () => {
    const { cells, answers } = await fixture(range);
    for (const priority of [undefined, ...PRIORITIES]) {
      const visible = sum(
        cells
          .filter(matches(priority))
          .filter((c) => !isHidden(c))
          .map((c) => c.n),
      );
      const totals = Object.fromEntries(GROUPINGS.map((g) => [g, total(answers.volume.get(key(priority, g))!)]));
      const times = answers.times.get(key(priority))!;
      expect(totals, `volume totals, priority ${priority ?? 'any'}`).toEqual(
        Object.fromEntries(GROUPINGS.map((g) => [g, visible])),
      );
      expect(times.all_teams.ticket_count, `resolution times all_teams, priority ${priority ?? 'any'}`).toBe(visible);
      expect(sum(times.rows.map((r) => r.ticket_count))).toBe(visible);
    }
  });

  it('19.2.2 each team and each priority counts its visible cells only, in both tools', async () => {
    const { cells, answers } = await fixture(range);
    for (const priority of [undefined, ...PRIORITIES]) {
      const visible = cells.filter(matches(priority)).filter((c) => !isHidden(c));
      const byTeam = new Map<string, number>();
      const byPriority = new Map<string, number>();
      for (const c of visible) {
        byTeam.set(c.team, (byTeam.get(c.team) ?? 0) + c.n);
        byPriority.set(c.priority, (byPriority.get(c.priority) ?? 0) + c.n);
      }
      const sorted = (m: Map<string, number>): [string, number][] => [...m].sort(([a], [b]) => a.localeCompare(b));
      const listed = (rows: { ticket_count: number }[], by: 'team' | 'priority'): [string, number][] =>
        rows
          .map((r) => [(r as Record<string, unknown>)[by] as string, r.ticket_count] as [string, number])
          .sort(([a], [b]) => a.localeCompare(b));
      expect(listed(answers.volume.get(key(priority, 'team'))!.rows, 'team')).toEqual(sorted(byTeam));
      expect(listed(answers.volume.get(key(priority, 'priority'))!.rows, 'priority')).toEqual(sorted(byPriority));
      expect(listed(answers.times.get(key(priority))!.rows, 'team')).toEqual(sorted(byTeam));
    }
  });

  it('19.2.2 each day, week and month counts its visible cells only', async () => {
    const { answers } = await fixture(range);
    for (const priority of [undefined, ...PRIORITIES]) {
      for (const period of ['day', 'week', 'month'] as const) {
        // The tickets outside every team-and-priority cell of under 5 requesters, per UTC period, from the raw tables.
        const { rows } = await admin.query<{ period: string; n: number }>(
          `with r as (select * from support.tickets
                       where created_at >= ($1::date)::timestamp at time zone 'UTC'
                         and created_at < ($2::date + 1)::timestamp at time zone 'UTC'
                         and ($3::text is null or priority = $3)),
                hidden as (select team_id, priority from r group by 1, 2 having count(distinct requester_id) < $5)
           select date_trunc($4, created_at at time zone 'UTC')::date::text as period, count(*)::int as n
             from r where (team_id, priority) not in (select team_id, priority from hidden)
            group by 1 order by 1`,
          [range.start_date, range.end_date, priority ?? null, period, THRESHOLD],
        );
        const answer = answers.volume.get(key(priority, period))!;
        expect(
          answer.rows.map((r) => [r.period, r.ticket_count]),
          `${priority ?? 'any'} by ${period}`,
        ).toEqual(rows.map((r) => [r.period, r.n]));
      }
    }
  });

  it('19.2.2 the answer counts the hidden cells and says its figures cover visible groups only', async () => {
    const { cells, answers } = await fixture(range);
    for (const priority of [undefined, ...PRIORITIES]) {
      const hidden = cells.filter(matches(priority)).filter(isHidden).length;
      const cover = hidden > 0 ? 'visible_groups_only' : 'all';
      for (const g of GROUPINGS) {
        const answer = answers.volume.get(key(priority, g))!;
        expect([answer.suppressed_groups, answer.figures_cover], `${priority ?? 'any'} by ${g}`).toEqual([
          hidden,
          cover,
        ]);
      }
      const times = answers.times.get(key(priority))!;
      expect([times.suppressed_groups, times.figures_cover]).toEqual([hidden, cover]);
    }
    // Both kinds of answer occur: a filter with nothing hidden says so.
    const covers = [undefined, ...PRIORITIES].map((p) => answers.volume.get(key(p, 'day'))!.figures_cover);
    expect(covers).toContain('visible_groups_only');
    if (range === RANGES[0]) expect(covers).toContain('all');
  });

  it('19.2.3 no hidden cell is published, nor the difference of published figures', async () => {
    const { cells, answers } = await fixture(range);
    const attacks: { what: string; got: number; hidden: number }[] = [];
    for (const cell of cells.filter(isHidden)) {
      const teamOf = (p: Priority | undefined): Volume => answers.volume.get(key(p, 'team'))!;
      // Published directly: the team's figure for that priority alone, in either tool.
      attacks.push({
        what: `${cell.team} by team, priority ${cell.priority}`,
        got: teamFigure(teamOf(cell.priority), cell.team),
        hidden: cell.n,
      });
      attacks.push({
        what: `${cell.team} in resolution times, priority ${cell.priority}`,
        got: teamFigure(answers.times.get(key(cell.priority))!, cell.team),
        hidden: cell.n,
      });
      // Two attributes: the team over every priority minus the team in each other priority.
      const others = PRIORITIES.filter((p) => p !== cell.priority).map((p) => teamFigure(teamOf(p), cell.team));
      attacks.push({
        what: `${cell.team} over every priority minus its other priorities`,
        got: teamFigure(teamOf(undefined), cell.team) - sum(others),
        hidden: cell.n,
      });
      const timesOthers = PRIORITIES.filter((p) => p !== cell.priority).map((p) =>
        teamFigure(answers.times.get(key(p))!, cell.team),
      );
      attacks.push({
        what: `${cell.team} in resolution times over every priority minus its other priorities`,
        got: teamFigure(answers.times.get(key(undefined))!, cell.team) - sum(timesOthers),
        hidden: cell.n,
      });
    }
    for (const priority of PRIORITIES) {
      const hiddenHere = cells.filter((c) => c.priority === priority && isHidden(c)).map((c) => c.n);
      if (hiddenHere.length === 0) continue;
      // What the hidden cells of one priority add up to (one cell's count when it is alone).
      const hidden = sum(hiddenHere);
      const teams = total(answers.volume.get(key(priority, 'team'))!);
      const byPriority = answers.volume.get(key(undefined, 'priority'))!.rows.find((r) => r.priority === priority);
      attacks.push({
        what: `priority ${priority}'s total minus its teams`,
        got: (byPriority?.ticket_count ?? 0) - teams,
        hidden,
      });
      for (const g of ['day', 'week', 'month', 'priority'] as const) {
        attacks.push({
          what: `priority ${priority} by ${g} minus by team`,
          got: total(answers.volume.get(key(priority, g))!) - teams,
          hidden,
        });
      }
      const times = answers.times.get(key(priority))!;
      attacks.push({
        what: `resolution times' all_teams minus its teams, priority ${priority}`,
        got: times.all_teams.ticket_count - sum(times.rows.map((r) => r.ticket_count)),
        hidden,
      });
      attacks.push({
        what: `resolution times' all_teams minus ticket volume by team, priority ${priority}`,
        got: times.all_teams.ticket_count - teams,
        hidden,
      });
    }
    expect(attacks.length).toBeGreaterThan(10);
    expect(attacks.filter((a) => a.got === a.hidden)).toEqual([]);
  });
});

describe('the registry holds a smallGroups template to its rule at start-up', () => {
  const input = z.strictObject({ ...dateRangeFields }).superRefine(checkDateRange, DATE_RANGE_ALWAYS);
  const byTeam = (build: 'visible' | 'unfiltered' | 'not a count'): AnyTemplate =>
    defineTemplate({
      name: 'query_team_tickets',
      title: 'Tickets by team',
      description: 'Counts the tickets of a range per team; teams of too few requesters are left out.',
      input,
      examples: [{ start_date: '2025-05-01', end_date: '2025-05-31' }],
      output: z.object({ rows: z.array(z.object({ team_id: z.string(), n: z.number() })) }),
      columns: {
        n: { type: 'integer', source: 'computed', treatment: 'plain' },
        hidden_groups: { type: 'integer', source: 'computed', treatment: 'hidden_groups' },
      },
      smallGroups: { people: 't.requester_id', by: ['t.team_id'] },
      query: (db, args, ctx) => {
        const rows = ticketsCreatedInRange(db, resolveRange(args), ctx.timeZone);
        return (build === 'unfiltered' ? rows : visibleGroupsOnly(rows, ctx))
          .select((eb) => [
            eb.fn.countAll().as('n'),
            build === 'not a count'
              ? eb.fn.max('t.requester_id').as('hidden_groups')
              : hiddenGroupCount(eb, rows, ctx).as('hidden_groups'),
          ])
          .groupBy('t.team_id');
      },
      present: () => ({ rows: [] }),
    }) as AnyTemplate;

  it('19.2.2 a template that declares smallGroups is served when every branch keeps to it', () => {
    expect(() => createRegistry([byTeam('visible')])).not.toThrow();
  });

  it('19.2.2 one whose statement does not leave out the hidden cells is refused', () => {
    expect(() => createRegistry([byTeam('unfiltered')])).toThrow(
      /query_team_tickets: declares smallGroups but does not keep to it .*visibleGroupsOnly/,
    );
  });

  it('19.2.2 one whose hidden_groups column is not a count of the hidden cells is refused', () => {
    expect(() => createRegistry([byTeam('not a count')])).toThrow(
      /column hidden_groups is hidden_groups but is not a count\(\*\) subquery/,
    );
  });
});

describe("the contract suite's small-groups rule for a smallGroups template", () => {
  const volume = supportDeskPack.templates.find((t) => t.name === 'query_ticket_volume')!;
  // What a statement would say: two rows (a group and the grand total), none of too few people, 3 hidden cells.
  const threeHidden: CountRows = async (_, where) => {
    if (!where) return 2;
    if (where.column === 'hidden_groups') return where.below > 3 ? 2 : 0;
    return 0;
  };

  it('19.2.2 flags a server that does not count the cells its statement hides', async () => {
    const uncounted = async () => ({
      content: [],
      structuredContent: { rows: [{}], truncated: false, suppressed_groups: 0, figures_cover: 'all' },
    });
    const messages = (await smallGroupViolations(uncounted, threeHidden, volume)).map((v) => v.message);
    expect(messages).toContainEqual(
      expect.stringMatching(/returned 1 rows, suppressed_groups 0 and figures_cover all; its query yields 2 rows/),
    );
  });

  it('19.2.2 passes one that counts them and says its figures cover visible groups only', async () => {
    const counted = async () => ({
      content: [],
      structuredContent: { rows: [{}], truncated: false, suppressed_groups: 3, figures_cover: 'visible_groups_only' },
    });
    const found = await smallGroupViolations(counted, threeHidden, volume);
    // Only the rule that everything is hidden above every group's people can flag this fake, which shows a row there.
    expect(found.map((v) => v.message).filter((m) => !m.includes('above every group'))).toEqual([]);
  });
});

describe('docs/security.md', () => {
  it('19.2.4 says what suppression leaves possible across calls over overlapping ranges, and what limits it', () => {
    const readme = readFileSync(new URL('../../docs/security.md', import.meta.url), 'utf8');
    const paragraph = readme.slice(
      readme.indexOf('### Small groups'),
      readme.indexOf('\n#', readme.indexOf('### Small groups') + 4),
    );
    expect(paragraph).toMatch(/tracker/i);
    expect(paragraph).toMatch(/one day/);
    expect(paragraph).toMatch(/filter/);
    expect(paragraph).toMatch(/90 days/);
  });
});
