/**
 * The support desk pack end to end, through a real MCP client: each template's figures against SQL run
 * through the admin connection on the raw `support` tables (or arithmetic on the rows it reads), in
 * UTC and in America/Havana, whose clocks change at midnight (skipped on 2025-03-09, repeated on
 * 2025-11-02); the rejected calls; and the requester's masking.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { supportDeskPack } from '../pack/index.js';
import { withDatabase } from '../../../src/db/connect.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { SUPPORT_READER_ROLE, TEST_SUPPORT_SEED } from '../../../test/support/database.js';
import { connectAdmin, startHarness, structured, textOf, type Harness } from '../../../test/support/harness.js';
import { readerUrlFor } from '../../../test/support/packs.js';
import { createClosedDatabase } from '../../../test/support/scratch.js';

const ZONES = ['UTC', 'America/Havana'] as const;
type Zone = (typeof ZONES)[number];
const harnesses = {} as Record<Zone, Harness>;
let admin: pg.Client;

beforeAll(async () => {
  admin = await connectAdmin();
  for (const timeZone of ZONES) {
    harnesses[timeZone] = await startHarness({
      readerUrl: readerUrlFor(supportDeskPack),
      templates: supportDeskPack.templates,
      timeZone,
    });
  }
});
afterAll(async () => {
  for (const harness of Object.values(harnesses)) await harness.close();
  await admin.end();
});

/** 90 days that hold Havana's skipped midnight (2025-03-09 starts at 01:00) and end a month before the data. */
const RANGE = { start_date: '2025-03-01', end_date: '2025-05-29' };

/** Tickets whose local creation day, in `zone`, lies in the range: the one fact a day's start must agree with. */
const IN_LOCAL_RANGE = `(t.created_at at time zone $1)::date between $2::date and $3::date`;

async function expectedCounts(
  zone: string,
  key: string,
  extra = '',
  params: unknown[] = [],
): Promise<[string, number][]> {
  return (await expectedGroups(zone, key, extra, params)).map((g) => [g.key, g.n]);
}

/**
 * The tickets every figure counts, from the raw tables: every one of the range (and `extra`'s filter).
 * Tickets count no one, so however few requesters stand behind a group, its count is exact.
 */
const visibleTickets = (extra: string): string => `
  with v as (select t.* from support.tickets t where ${IN_LOCAL_RANGE} ${extra})`;

/** Each group's tickets and distinct requesters. */
async function expectedGroups(
  zone: string,
  key: string,
  extra = '',
  params: unknown[] = [],
): Promise<{ key: string; n: number; requesters: number }[]> {
  const { rows } = await admin.query<{ key: string; n: number; requesters: number }>(
    `${visibleTickets(extra)}
     select ${key} as key, count(*)::int as n, count(distinct t.requester_id)::int as requesters
       from v t join support.teams tm on tm.id = t.team_id group by 1`,
    [zone, RANGE.start_date, RANGE.end_date, ...params],
  );
  return rows;
}

interface VolumeRow {
  period?: string;
  priority?: string;
  team?: string;
  ticket_count: number;
}

const volumeResult = async (zone: Zone, args: Record<string, unknown>): Promise<{ rows: VolumeRow[] }> =>
  structured(await harnesses[zone].call('query_ticket_volume', { ...RANGE, ...args }));
const volume = async (zone: Zone, args: Record<string, unknown>): Promise<VolumeRow[]> =>
  (await volumeResult(zone, args)).rows;

const byTimeOrder = (rows: [string, number][]): [string, number][] => [...rows].sort(([a], [b]) => a.localeCompare(b));
const busiestFirst = (rows: [string, number][]): [string, number][] =>
  [...rows].sort(([a, x], [b, y]) => y - x || a.localeCompare(b));

describe('the test data', () => {
  it('holds the seeded tickets, the range among them, and tickets still waiting', async () => {
    const { rows } = await admin.query<{ n: number; in_range: number; waiting: number }>(
      `select count(*)::int as n,
              count(*) filter (where created_at >= '2025-03-01 00:00+00' and created_at < '2025-05-30 00:00+00')::int as in_range,
              count(*) filter (where resolved_at is null)::int as waiting
         from support.tickets`,
    );
    expect(rows[0]!.n).toBe(TEST_SUPPORT_SEED.tickets);
    expect(rows[0]!.in_range).toBeGreaterThan(300);
    expect(rows[0]!.waiting).toBeGreaterThan(0);
  });
});

describe.each(ZONES)('query_ticket_volume in %s', (zone) => {
  it('by day, week and month gives each local period its tickets', async () => {
    const day = `(t.created_at at time zone $1)::date::text`;
    expect((await volume(zone, { group_by: 'day' })).map((r) => [r.period, r.ticket_count])).toEqual(
      byTimeOrder(await expectedCounts(zone, day)),
    );
    const week = `date_trunc('week', (t.created_at at time zone $1)::date)::date::text`;
    expect((await volume(zone, { group_by: 'week' })).map((r) => [r.period, r.ticket_count])).toEqual(
      byTimeOrder(await expectedCounts(zone, week)),
    );
    const month = `date_trunc('month', (t.created_at at time zone $1)::date)::date::text`;
    const months = await volume(zone, { group_by: 'month' });
    expect(months.map((r) => [r.period, r.ticket_count])).toEqual(byTimeOrder(await expectedCounts(zone, month)));
    expect(months.map((r) => r.period)).toEqual(['2025-03-01', '2025-04-01', '2025-05-01']);
  });

  it('by priority and by team, busiest first, and for one priority only; every group exact', async () => {
    const priorities = await volumeResult(zone, { group_by: 'priority' });
    expect(priorities.rows.map((r) => [r.priority, r.ticket_count])).toEqual(
      busiestFirst(await expectedCounts(zone, 't.priority')),
    );
    const teams = await volumeResult(zone, { group_by: 'team' });
    expect(teams.rows.map((r) => [r.team, r.ticket_count])).toEqual(
      busiestFirst(await expectedCounts(zone, 'tm.name')),
    );
    const urgentTeams = await expectedGroups(zone, 'tm.name', 'and t.priority = $4', ['urgent']);
    const urgent = await volumeResult(zone, { group_by: 'team', priority: 'urgent' });
    expect(urgent.rows.map((r) => [r.team, r.ticket_count])).toEqual(
      busiestFirst(urgentTeams.map((g) => [g.key, g.n])),
    );
    // Teams whose urgent tickets come from fewer than 5 requesters are listed, exact, all the same.
    expect(urgentTeams.some((g) => g.requesters < 5)).toBe(true);
  });

  it('never leaves a period out, however few requesters it has', async () => {
    const days = await volumeResult(zone, { group_by: 'day' });
    expect(days.rows.map((r) => [r.period, r.ticket_count])).toEqual(
      byTimeOrder(await expectedCounts(zone, `(t.created_at at time zone $1)::date::text`)),
    );
    const few = (await expectedGroups(zone, `(t.created_at at time zone $1)::date::text`)).filter(
      (g) => g.requesters < 5,
    );
    expect(few.length).toBeGreaterThan(0); // days this small exist, and are listed all the same
  });
});

/** Calendar arithmetic on YYYY-MM-DD days, in UTC so that no zone's clock change moves a day. */
const dayMs = (day: string): number => Date.parse(`${day}T00:00:00Z`);
const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const mondayOf = (day: string): string => dayOf(dayMs(day) - ((new Date(dayMs(day)).getUTCDay() + 6) % 7) * 86_400_000);
const sundayOf = (day: string): string => dayOf(dayMs(mondayOf(day)) + 6 * 86_400_000);
const firstOfMonth = (day: string): string => `${day.slice(0, 7)}-01`;
const lastOfMonth = (day: string): string => {
  const d = new Date(dayMs(day));
  return dayOf(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0));
};

const CUT_PERIODS = [
  {
    group_by: 'week',
    range: { start_date: '2025-03-05', end_date: '2025-05-22' }, // a Wednesday to a Thursday
    key: `date_trunc('week', (t.created_at at time zone $1)::date)::date::text`,
    period: { label: mondayOf, last: sundayOf },
  },
  {
    group_by: 'month',
    range: { start_date: '2025-03-12', end_date: '2025-05-20' },
    key: `date_trunc('month', (t.created_at at time zone $1)::date)::date::text`,
    period: { label: firstOfMonth, last: lastOfMonth },
  },
] as const;

it.each(ZONES.flatMap((zone) => CUT_PERIODS.map((c) => ({ zone, ...c }))))(
  '19.1.3 query_ticket_volume in $zone by $group_by: the first and last rows say partial with the days they count; whole periods say nothing',
  async ({ zone, group_by, range, key, period }) => {
    const result = structured<{ rows: (VolumeRow & Record<string, unknown>)[] }>(
      await harnesses[zone].call('query_ticket_volume', { ...range, group_by }),
    );
    const { rows: expected } = await admin.query<{ key: string; n: number }>(
      `${visibleTickets('')} select ${key} as key, count(*)::int as n from v t group by 1 order by 1`,
      [zone, range.start_date, range.end_date],
    );
    expect(result.rows.map((r) => [r.period, r.ticket_count])).toEqual(expected.map((e) => [e.key, e.n]));
    expect(result.rows.length).toBeGreaterThan(2);

    const head = result.rows[0]!;
    const tail = result.rows.at(-1)!;
    expect(head.period).toBe(period.label(range.start_date));
    expect(tail.period).toBe(period.label(range.end_date));
    const bounds = (r: Record<string, unknown>): Record<string, unknown> => ({
      partial: r.partial,
      first_day: r.first_day,
      last_day: r.last_day,
      until: r.until,
    });
    expect(bounds(head)).toEqual({
      partial: true,
      first_day: range.start_date,
      last_day: period.last(range.start_date),
      until: undefined,
    });
    expect(bounds(tail)).toEqual({
      partial: true,
      first_day: period.label(range.end_date),
      last_day: range.end_date,
      until: undefined,
    });
    for (const whole of result.rows.slice(1, -1)) {
      expect(Object.keys(whole).sort()).toEqual(['period', 'ticket_count']);
    }
  },
);

describe('the day Havana skips midnight', () => {
  it('2025-03-09 starts at 01:00 local, and its tickets are those PostgreSQL dates to it', async () => {
    const out = structured<{ starts_at: string; ends_before: string; rows: VolumeRow[] }>(
      await harnesses['America/Havana'].call('query_ticket_volume', {
        start_date: '2025-03-09',
        end_date: '2025-03-09',
        group_by: 'day',
      }),
    );
    expect(out.starts_at).toBe('2025-03-09T01:00:00.000-04:00');
    expect(out.ends_before).toBe('2025-03-10T00:00:00.000-04:00');
    const { rows } = await admin.query<{ n: number }>(`${visibleTickets('')} select count(*)::int as n from v`, [
      'America/Havana',
      '2025-03-09',
      '2025-03-09',
    ]);
    expect(out.rows.map((r) => r.ticket_count)).toEqual(rows[0]!.n === 0 ? [] : [rows[0]!.n]);
  });
});

interface Times {
  ticket_count: number;
  responded_count: number;
  median_first_response_hours: number | null;
  p90_first_response_hours: number | null;
  resolved_count: number;
  median_resolution_hours: number | null;
  p90_resolution_hours: number | null;
}

/** PostgreSQL's percentile_cont, by hand: linear interpolation at fraction × (n − 1) of the sorted values. */
function percentile(values: readonly number[], fraction: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const at = fraction * (sorted.length - 1);
  const [lo, hi] = [Math.floor(at), Math.ceil(at)];
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo);
}

interface RawTicket {
  team: string;
  created: Date;
  responded: Date | null;
  resolved: Date | null;
}

/** The times of some tickets, computed here from their timestamps. */
function timesOf(tickets: readonly RawTicket[]): Times {
  const hours = (from: Date, to: Date | null): number[] => (to ? [(to.getTime() - from.getTime()) / 3_600_000] : []);
  const response = tickets.flatMap((t) => hours(t.created, t.responded));
  const resolution = tickets.flatMap((t) => hours(t.created, t.resolved));
  return {
    ticket_count: tickets.length,
    responded_count: response.length,
    median_first_response_hours: percentile(response, 0.5),
    p90_first_response_hours: percentile(response, 0.9),
    resolved_count: resolution.length,
    median_resolution_hours: percentile(resolution, 0.5),
    p90_resolution_hours: percentile(resolution, 0.9),
  };
}

/** The tool rounds hours to 2 decimals: each must be within half a hundredth of the exact figure. */
function expectTimes(actual: Times, expected: Times, what: string): void {
  for (const [key, value] of Object.entries(expected) as [keyof Times, number | null][]) {
    const got = actual[key];
    if (value === null || key.endsWith('_count')) expect(got, `${what} ${key}`).toBe(value);
    else
      expect(Math.abs((got as number) - value), `${what} ${key}: ${got} against ${value}`).toBeLessThanOrEqual(
        0.005 + 1e-9,
      );
  }
}

/** The visible tickets of a range (see visibleTickets), with their team's name and their times. */
async function rawTickets(
  client: pg.Client,
  zone: string,
  range: { start_date: string; end_date: string },
  priority?: string,
): Promise<RawTicket[]> {
  const { rows } = await client.query<RawTicket>(
    `${visibleTickets('and ($4::text is null or t.priority = $4)')}
     select tm.name as team, t.created_at as created, t.first_response_at as responded, t.resolved_at as resolved
       from v t join support.teams tm on tm.id = t.team_id`,
    [zone, range.start_date, range.end_date, priority ?? null],
  );
  return rows;
}

describe.each(ZONES)('query_resolution_times in %s', (zone) => {
  it.each([undefined, 'high'])(
    'gives each team and the whole desk its median and p90 hours (priority %s)',
    async (priority) => {
      const tickets = await rawTickets(admin, zone, RANGE, priority);
      const out = structured<{
        all_teams: Times;
        rows: (Times & { team: string })[];
        row_count: number;
        truncated: boolean;
      }>(await harnesses[zone].call('query_resolution_times', { ...RANGE, ...(priority ? { priority } : {}) }));
      expectTimes(out.all_teams, timesOf(tickets), 'all teams');
      const teams = [...new Set(tickets.map((t) => t.team))].sort();
      expect(out.rows.map((r) => r.team)).toEqual(teams);
      for (const row of out.rows) expectTimes(row, timesOf(tickets.filter((t) => t.team === row.team)), row.team);
      expect([out.row_count, out.truncated]).toEqual([teams.length, undefined]); // not cut: no flag
      // Some tickets of the range are still waiting, so the counts differ: the times leave them out.
      expect(out.all_teams.resolved_count).toBeLessThanOrEqual(out.all_teams.ticket_count);
    },
  );

  it('gives counts of 0 and no times for a range without tickets', async () => {
    const out = structured<{ all_teams: Times; rows: unknown[] }>(
      await harnesses[zone].call('query_resolution_times', { start_date: '2030-01-01', end_date: '2030-01-31' }),
    );
    expect(out.rows).toEqual([]);
    expect(out.all_teams).toEqual({
      ticket_count: 0,
      responded_count: 0,
      median_first_response_hours: null,
      p90_first_response_hours: null,
      resolved_count: 0,
      median_resolution_hours: null,
      p90_resolution_hours: null,
    });
  });
});

interface TicketRow {
  ticket_ref: string;
  created_at: string;
  priority: string;
  status: string;
  team: string;
  agent_initials: string | null;
  first_response_at: string | null;
  resolved_at: string | null;
  requester_ref?: string;
  requester_initials?: string;
  requester_email?: string;
  requester_phone_last4?: string;
}

describe('query_recent_tickets', () => {
  const LAST_WEEKS = { start_date: '2025-06-01', end_date: '2025-06-30' };

  async function newest(zone: string, limit: number, status?: string): Promise<Record<string, unknown>[]> {
    const { rows } = await admin.query(
      `select t.id, t.requester_id, t.created_at, t.priority, t.status, tm.name as team, a.name as agent,
              t.first_response_at, t.resolved_at, r.name, r.email, r.phone
         from support.tickets t join support.teams tm on tm.id = t.team_id
         join support.requesters r on r.id = t.requester_id left join support.agents a on a.id = t.agent_id
        where ${IN_LOCAL_RANGE} and ($4::text is null or t.status = $4)
        order by t.created_at desc, t.id desc limit $5`,
      [zone, LAST_WEEKS.start_date, LAST_WEEKS.end_date, status ?? null, limit],
    );
    return rows;
  }

  const initials = (name: string): string =>
    name
      .split(' ')
      .map((part) => `${part[0]!.toUpperCase()}.`)
      .join('');
  const iso = (at: unknown): string | null => (at instanceof Date ? at.toISOString() : null);
  /** A ticket's own fields, as every row carries them. */
  const ticketFields = (raw: Record<string, unknown>): Record<string, unknown> => ({
    ticket_ref: expect.stringMatching(/^tic_[A-Za-z0-9_-]{16}$/),
    created_at: iso(raw.created_at),
    priority: raw.priority,
    status: raw.status,
    team: raw.team,
    agent_initials: raw.agent === null ? null : initials(raw.agent as string),
    first_response_at: iso(raw.first_response_at),
    resolved_at: iso(raw.resolved_at),
  });

  it.each(ZONES)('lists the newest tickets of the range in %s, the requester desensitized', async (zone) => {
    const out = structured<{ rows: TicketRow[]; row_count: number; truncated: boolean }>(
      await harnesses[zone].call('query_recent_tickets', {
        ...LAST_WEEKS,
        limit: 30,
        requester_fields: ['initials', 'email', 'phone_last4', 'ref'],
      }),
    );
    const expected = await newest(zone, 31);
    expect(expected).toHaveLength(31); // more than the limit: the answer is truncated
    expect([out.row_count, out.truncated]).toEqual([30, true]);
    out.rows.forEach((row, i) => {
      const raw = expected[i]!;
      expect(row).toEqual({
        ...ticketFields(raw),
        requester_ref: expect.stringMatching(/^req_[A-Za-z0-9_-]{16}$/),
        requester_initials: initials(raw.name as string),
        requester_email: `${(raw.email as string)[0]}***@${(raw.email as string).split('@')[1]}`,
        requester_phone_last4: (raw.phone as string).replace(/\D/g, '').slice(-4),
      });
    });
    // The same requester is always the same reference, and two requesters never share one.
    const refs = new Map<string, string>();
    out.rows.forEach((row, i) => refs.set(String(expected[i]!.requester_id), row.requester_ref!));
    expect(new Set(refs.values()).size).toBe(refs.size);
    out.rows.forEach((row, i) => expect(row.requester_ref).toBe(refs.get(String(expected[i]!.requester_id))));
  });

  it('never returns a requester raw: no name, email or phone appears anywhere in the answer', async () => {
    const result = await harnesses.UTC.call('query_recent_tickets', {
      ...LAST_WEEKS,
      limit: 100,
      requester_fields: ['initials', 'email', 'phone_last4', 'ref'],
    });
    const text = JSON.stringify(result);
    const raw = await newest('UTC', 100);
    expect(raw.length).toBeGreaterThan(50);
    for (const ticket of raw) {
      for (const value of [ticket.name, ticket.email, ticket.phone, ticket.agent]) {
        if (value !== null) expect(text).not.toContain(value as string);
      }
    }
    expect(textOf(result)).toContain('***@');
  });

  it('carries no requester field unless named, and then only the one named', async () => {
    const statements: string[] = [];
    const harness = harnesses.UTC;
    const execute = harness.reader.execute.bind(harness.reader);
    harness.reader.execute = (query, signal) => (statements.push(query.sql), execute(query, signal));
    try {
      const expected = await newest('UTC', 10);
      const plain = structured<{ rows: TicketRow[] }>(
        await harness.call('query_recent_tickets', { ...LAST_WEEKS, limit: 10 }),
      );
      expect(plain.rows).toEqual(expected.map(ticketFields));
      expect(statements.at(-1)).not.toMatch(/"requesters"|"requester_id"|"email_masked"|"phone_last4"/);
      const one = structured<{ rows: TicketRow[] }>(
        await harness.call('query_recent_tickets', { ...LAST_WEEKS, limit: 10, requester_fields: ['email'] }),
      );
      expect(one.rows).toEqual(
        expected.map((raw) => ({
          ...ticketFields(raw),
          requester_email: `${(raw.email as string)[0]}***@${(raw.email as string).split('@')[1]}`,
        })),
      );
      expect(statements.at(-1)).toMatch(/"r"\."email_masked"/);
      expect(statements.at(-1)).not.toMatch(/"r"\."name_initials"|"r"\."phone_last4"|"requester_id" as/);
    } finally {
      harness.reader.execute = execute;
    }
  });

  it('filters by lists of teams, priorities and statuses, each value bound', async () => {
    const filters = { team: ['Billing', 'Technical'], priority: ['normal', 'low'], status: ['closed', 'pending'] };
    const out = structured<{ rows: TicketRow[] }>(
      await harnesses.UTC.call('query_recent_tickets', { ...LAST_WEEKS, filters, limit: 40 }),
    );
    const { rows } = await admin.query<{ created_at: Date; team: string }>(
      `select t.created_at, tm.name as team from support.tickets t join support.teams tm on tm.id = t.team_id
        where t.created_at >= '2025-06-01 00:00+00' and t.created_at < '2025-07-01 00:00+00'
          and tm.name = any($1) and t.priority = any($2) and t.status = any($3)
        order by t.created_at desc, t.id desc limit 40`,
      [filters.team, filters.priority, filters.status],
    );
    expect(rows.length).toBeGreaterThan(10);
    expect(out.rows.map((r) => [r.created_at, r.team])).toEqual(rows.map((r) => [r.created_at.toISOString(), r.team]));
    expect(new Set(out.rows.map((r) => r.team))).toEqual(new Set(filters.team));
  });

  it('filters by status and priority', async () => {
    const out = structured<{ rows: TicketRow[]; status: string; priority: string }>(
      await harnesses.UTC.call('query_recent_tickets', { ...LAST_WEEKS, status: 'pending', priority: 'low' }),
    );
    const { rows } = await admin.query<{ created_at: Date }>(
      `select created_at from support.tickets
        where created_at >= '2025-06-01 00:00+00' and created_at < '2025-07-01 00:00+00' and status = 'pending' and priority = 'low'
        order by created_at desc, id desc limit 20`,
    );
    expect(out.rows.map((r) => r.created_at)).toEqual(rows.map((r) => r.created_at.toISOString()));
    expect(out.rows.every((r) => r.status === 'pending' && r.priority === 'low' && r.resolved_at === null)).toBe(true);
    expect([out.status, out.priority]).toEqual(['pending', 'low']);
  });
});

describe('rejected calls name the field and the rule', () => {
  it.each([
    [
      'query_ticket_volume',
      { ...RANGE, group_by: 'year' },
      /group_by.*"year" is not allowed; use one of day, week, month, priority, team/,
    ],
    ['query_ticket_volume', { ...RANGE }, /group_by.*is required/],
    ['query_ticket_volume', { ...RANGE, group_by: 'day', priority: 'critical' }, /priority.*"critical" is not allowed/],
    ['query_resolution_times', { start_date: '2025-01-01', end_date: '2025-04-01' }, /end_date.*at most 90 days/],
    ['query_resolution_times', { start_date: '2025-02-01', end_date: '2025-01-31' }, /end_date.*before start_date/],
    [
      'query_resolution_times',
      { ...RANGE, team: 'Billing' },
      /"team": is not a known argument; the arguments are start_date, end_date, period, priority/,
    ],
    ['query_recent_tickets', { ...RANGE, limit: 101 }, /limit.*at most 100/],
    [
      'query_recent_tickets',
      { ...RANGE, filters: { priority: ['critical'] } },
      /filters\.priority\.0: "critical" is not allowed; use one of low, normal, high, urgent/,
    ],
    [
      'query_recent_tickets',
      { ...RANGE, filters: { agent: ['A.B.'] } },
      /filters\."agent": is not a known filter; the filters are team, priority and status/,
    ],
    [
      'query_recent_tickets',
      { ...RANGE, requester_fields: ['name'] },
      /requester_fields\.0: "name" is not allowed; use one of initials, email, phone_last4, ref/,
    ],
    [
      'query_recent_tickets',
      { ...RANGE, status: 'resolved' },
      /status.*"resolved" is not allowed; use one of open, pending, solved, closed/,
    ],
    [
      'query_recent_tickets',
      { start_date: '2025-02-30', end_date: '2025-03-01' },
      /start_date.*not a real calendar day/,
    ],
  ])('%s %j', async (tool, args, message) => {
    const result = await harnesses.UTC.call(tool, args);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(message);
    expect(result.structuredContent).toBeUndefined();
  });
});

describe('the tools as a client lists them', () => {
  it('are the four support desk tools, read-only and with output schemas', async () => {
    const { tools } = await harnesses.UTC.client.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      'query_ticket_volume',
      'query_resolution_times',
      'query_recent_tickets',
      'query_ticket_metrics',
    ]);
    for (const tool of tools) {
      expect(tool.annotations).toEqual({ readOnlyHint: true, openWorldHint: false });
      expect(tool.outputSchema?.type).toBe('object');
    }
  });
});

describe('a day whose midnight happens twice (America/Havana, 2025-11-02), on hand-made tickets', () => {
  let name: string;
  let server: pg.Client;
  let scratch: pg.Client;
  let havana: Harness;

  beforeAll(async () => {
    server = await connectAdmin();
    name = `support_fall_back_${Date.now().toString(36)}`;
    await createClosedDatabase(server, name);
    const adminUrl = withDatabase(inject('adminUrl'), name);
    await migrateToLatest(adminUrl, supportDeskPack, SUPPORT_READER_ROLE, silentLogger);
    await server.query(`grant connect on database ${server.escapeIdentifier(name)} to ${SUPPORT_READER_ROLE}`);
    scratch = new pg.Client({ connectionString: adminUrl });
    await scratch.connect();
    await scratch.query(`insert into support.teams (id, name) values (1, 'Billing'), (2, 'Technical')`);
    // Seven requesters, so that no team stands for too few people and every ticket is counted.
    await scratch.query(
      `insert into support.requesters (id, name, email, phone)
       select n, 'Rosa Parks', 'rosa' || n || '@example.com', '+53 7 123 456' || n from generate_series(1, 7) as n`,
    );
    // A ticket every 20 minutes from 2025-10-31 to 2025-11-04 UTC, alternating teams; the n-th is
    // answered after n minutes and resolved after 2n hours, so every time is known exactly.
    await scratch.query(`
      insert into support.tickets (id, requester_id, team_id, priority, status, created_at, first_response_at, resolved_at)
      select n, 1 + n % 7, 1 + n % 2, 'normal', 'closed', at, at + n * interval '1 minute', at + n * interval '2 hours'
        from generate_series(1, 12 * 24 * 4) as n,
             lateral (select timestamptz '2025-10-31 00:00:00+00' + (n - 1) * interval '20 minutes' as at) as t`);
    havana = await startHarness({
      readerUrl: withDatabase(readerUrlFor(supportDeskPack), name),
      templates: supportDeskPack.templates,
      timeZone: 'America/Havana',
    });
  });
  afterAll(async () => {
    await havana?.close();
    await scratch?.end();
    await server.query(`drop database if exists ${server.escapeIdentifier(name)} with (force)`);
    await server.end();
  });

  it('the day holds 25 hours of tickets, three an hour, starting at the first midnight', async () => {
    const out = structured<{ starts_at: string; ends_before: string; rows: VolumeRow[] }>(
      await havana.call('query_ticket_volume', { start_date: '2025-11-01', end_date: '2025-11-03', group_by: 'day' }),
    );
    const { rows } = await scratch.query<{ day: string; n: number }>(
      `select (created_at at time zone 'America/Havana')::date::text as day, count(*)::int as n from support.tickets
        where (created_at at time zone 'America/Havana')::date between '2025-11-01' and '2025-11-03' group by 1 order by 1`,
    );
    expect(out.rows.map((r) => [r.period, r.ticket_count])).toEqual(rows.map((r) => [r.day, r.n]));
    expect(rows.find((r) => r.day === '2025-11-02')!.n).toBe(75);
    expect(out.starts_at).toBe('2025-11-01T00:00:00.000-04:00');
    expect(out.ends_before).toBe('2025-11-04T00:00:00.000-05:00');
  });

  it('resolution times of that day are those of its 75 tickets', async () => {
    const out = structured<{ all_teams: Times; rows: (Times & { team: string })[] }>(
      await havana.call('query_resolution_times', { start_date: '2025-11-02', end_date: '2025-11-02' }),
    );
    const tickets = await rawTickets(scratch, 'America/Havana', { start_date: '2025-11-02', end_date: '2025-11-02' });
    expect(tickets).toHaveLength(75);
    expectTimes(out.all_teams, timesOf(tickets), 'all teams');
    for (const row of out.rows) expectTimes(row, timesOf(tickets.filter((t) => t.team === row.team)), row.team);
    expect(out.rows.map((r) => r.team)).toEqual(['Billing', 'Technical']);
  });
});
