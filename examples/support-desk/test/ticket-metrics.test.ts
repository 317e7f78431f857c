/**
 * query_ticket_metrics, the tool the desk's metric declarations derive (pack/metrics.ts), through a
 * real MCP client: each question in one call, held to figures computed here in plain JavaScript from
 * the raw `support` tables read through the admin connection (each ticket's local day and hour
 * included; nothing of the server's statement), in UTC and in America/Havana (whose clocks jump from
 * 00:00 to 01:00 on 2025-03-09); tickets counted exactly and requesters released by the cell-key rule
 * (recomputed here from the rule as docs/security.md states it); and the tool served beside the sales
 * pack's query_metrics.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { templates as salesTemplates } from '../../../queries/index.js';
import { createRegistry } from '../../../src/registry/index.js';
import { connectAdmin, startHarness, structured, textOf, type Harness } from '../../../test/support/harness.js';
import { readerUrlFor } from '../../../test/support/packs.js';
import { personKeySql, releasedOf, TEST_SEED } from '../../../test/support/protected-counts.js';
import { supportDeskPack } from '../pack/index.js';

const ZONES = ['UTC', 'America/Havana'] as const;
const RANGE = { start_date: '2025-03-01', end_date: '2025-05-29' };
const THRESHOLD = 5;
const TOOL = 'query_ticket_metrics';

interface Ticket {
  requester: string;
  team: string;
  priority: string;
  status: string;
  created: Date;
  responded: Date | null;
  resolved: Date | null;
  /** The local day and hour of its opening in each zone, read by the admin connection. */
  local: Record<string, { day: string; hour: number }>;
}
type Figures = Record<string, unknown>;
interface Answer {
  rows?: Figures[];
  totals: Figures[];
  truncated: boolean;
}

let admin: pg.Client;
let tickets: Ticket[];
/** Each requester's key under the harness's seed, read through the admin connection. */
let keys: Map<string, bigint>;
const harnesses = new Map<string, Harness>();

beforeAll(async () => {
  admin = await connectAdmin();
  const { rows } = await admin.query<{
    requester_id: string;
    team: string;
    priority: string;
    status: string;
    created_at: Date;
    first_response_at: Date | null;
    resolved_at: Date | null;
    utc_day: string;
    utc_hour: number;
    havana_day: string;
    havana_hour: number;
  }>(
    `select t.requester_id, tm.name as team, t.priority, t.status, t.created_at, t.first_response_at, t.resolved_at,
            to_char(t.created_at at time zone 'UTC', 'YYYY-MM-DD') as utc_day,
            extract(hour from t.created_at at time zone 'UTC')::int as utc_hour,
            to_char(t.created_at at time zone 'America/Havana', 'YYYY-MM-DD') as havana_day,
            extract(hour from t.created_at at time zone 'America/Havana')::int as havana_hour
       from support.tickets t join support.teams tm on tm.id = t.team_id`,
  );
  tickets = rows.map((r) => ({
    requester: r.requester_id,
    team: r.team,
    priority: r.priority,
    status: r.status,
    created: r.created_at,
    responded: r.first_response_at,
    resolved: r.resolved_at,
    local: {
      UTC: { day: r.utc_day, hour: r.utc_hour },
      'America/Havana': { day: r.havana_day, hour: r.havana_hour },
    },
  }));
  const keyed = await admin.query<{ id: string; key: string }>(
    `select id::text, ${personKeySql('id')}::text as key from support.requesters`,
    [TEST_SEED],
  );
  keys = new Map(keyed.rows.map((r) => [r.id, BigInt(r.key)]));
  for (const timeZone of ZONES) {
    harnesses.set(
      timeZone,
      await startHarness({ readerUrl: readerUrlFor(supportDeskPack), templates: supportDeskPack.templates, timeZone }),
    );
  }
});
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
  await admin.end();
});

/** The tickets whose local opening day, in the zone, lies in RANGE. */
const inRange = (timeZone: string): Ticket[] =>
  tickets.filter((t) => {
    const { day } = t.local[timeZone]!;
    return day >= RANGE.start_date && day <= RANGE.end_date;
  });

function groupBy<T>(list: T[], key: (t: T) => string | number): Map<string | number, T[]> {
  const out = new Map<string | number, T[]>();
  for (const t of list) out.set(key(t), [...(out.get(key(t)) ?? []), t]);
  return out;
}

const round = (value: number, places: number): number => Math.round(value * 10 ** places) / 10 ** places;
/** Biggest first, then by key, as the tool ranks attribute groups. */
const ranked = (rows: Figures[], metric: string, key: string): Figures[] =>
  [...rows].sort((a, b) => Number(b[metric]) - Number(a[metric]) || String(a[key]).localeCompare(String(b[key])));

/** The released count of the distinct requesters of some tickets. */
function requestersOf(ts: Ticket[]): number {
  const people = [...new Set(ts.map((t) => t.requester))];
  return releasedOf(
    people.length,
    people.reduce((sum, p) => sum + keys.get(p)!, 0n),
    THRESHOLD,
  );
}

async function ask(harness: Harness, args: Record<string, unknown>): Promise<Answer> {
  const result = await harness.call(TOOL, { ...RANGE, ...args });
  if (result.isError) throw new Error(`${TOOL} ${JSON.stringify(args)} failed: ${textOf(result)}`);
  return structured<Answer>(result);
}

describe.each(ZONES)(`${TOOL} in %s`, (timeZone) => {
  const h = (): Harness => harnesses.get(timeZone)!;

  it('gives each team its tickets, resolved tickets and resolution rate, with the exact totals', async () => {
    const list = inRange(timeZone);
    const figures = (ts: Ticket[]): Figures => {
      const resolved = ts.filter((t) => t.resolved !== null).length;
      return { tickets: ts.length, resolved_tickets: resolved, resolution_rate: round(resolved / ts.length, 4) };
    };
    const expected = [...groupBy(list, (t) => t.team)].map(([team, ts]) => ({ team, ...figures(ts) }));
    const out = await ask(h(), { metrics: ['tickets', 'resolved_tickets', 'resolution_rate'], group_by: ['team'] });
    // Tickets count no one: every team and the totals are exact, however few requesters stand behind them.
    expect(out.rows).toEqual(ranked(expected, 'tickets', 'team'));
    expect(out.totals).toEqual([figures(list)]);
    expect(list.length).toBeGreaterThan(300);
  });

  it('counts the urgent tickets by local hour of day', async () => {
    const list = inRange(timeZone).filter((t) => t.priority === 'urgent');
    const hours = [...groupBy(list, (t) => t.local[timeZone]!.hour)];
    const out = await ask(h(), { metrics: ['tickets'], group_by: ['hour_of_day'], filters: { priority: ['urgent'] } });
    expect(out.rows).toEqual(
      hours
        .sort((a, b) => Number(a[0]) - Number(b[0]))
        .map(([hour, ts]) => ({ hour_of_day: hour, tickets: ts.length })),
    );
    expect(out.totals).toEqual([{ tickets: list.length }]);
    expect(hours.some(([, ts]) => ts.length < THRESHOLD)).toBe(true); // hours of a single ticket are listed as they are
  });

  it('averages the hours to a first response by priority as a ratio of sums', async () => {
    const list = inRange(timeZone);
    const figures = (ts: Ticket[]): Figures => {
      const responded = ts.filter((t) => t.responded !== null);
      const ms = responded.reduce((sum, t) => sum + (t.responded!.getTime() - t.created.getTime()), 0);
      return {
        avg_first_response_hours: responded.length === 0 ? null : round(ms / 3_600_000 / responded.length, 4),
        responded_tickets: responded.length,
      };
    };
    const expected = [...groupBy(list, (t) => t.priority)].map(([priority, ts]) => ({ priority, ...figures(ts) }));
    const out = await ask(h(), { metrics: ['avg_first_response_hours', 'responded_tickets'], group_by: ['priority'] });
    expect(out.rows).toEqual(ranked(expected, 'avg_first_response_hours', 'priority'));
    expect(out.totals).toEqual([figures(list)]);
  });

  it('releases distinct requesters by the cell-key rule and leaves the tickets beside them exact', async () => {
    const list = inRange(timeZone);
    const figures = (ts: Ticket[]): { requesters: number; tickets: number } => ({
      requesters: requestersOf(ts),
      tickets: ts.length,
    });
    for (const group_by of [['priority'], ['team', 'priority']]) {
      const key = (t: Ticket): string => group_by.map((d) => t[d as 'team']).join('|');
      const groups = [...groupBy(list, key)].map(([, ts]) => ({
        ...Object.fromEntries(group_by.map((d) => [d, ts[0]![d as 'team']])),
        ...figures(ts),
      }));
      const out = await ask(h(), { metrics: ['requesters', 'tickets'], group_by, limit: 100 });
      const sorted = (rows: Figures[]): Figures[] =>
        [...rows].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
      expect(sorted(out.rows!)).toEqual(sorted(groups));
      expect(out.totals).toEqual([figures(list)]);
      // Never a count of 1 to 4; and the data has such groups, so the rule is seen at work.
      expect(out.rows!.every((r) => r.requesters === 0 || Number(r.requesters) >= THRESHOLD)).toBe(true);
      if (group_by.length === 2) {
        const small = [...groupBy(list, key)].filter(([, ts]) => new Set(ts.map((t) => t.requester)).size < THRESHOLD);
        expect(small.length).toBeGreaterThan(0);
      }
    }
  });
});

describe(`${TOOL} refusals and naming`, () => {
  it('refuses a priority outside the closed list, naming the field', async () => {
    const result = await harnesses.get('UTC')!.call(TOOL, {
      ...RANGE,
      metrics: ['tickets'],
      filters: { priority: ['critical'] },
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/filters\.priority/);
  });

  it('is served beside the sales pack, whose query_metrics keeps its name', () => {
    const registry = createRegistry([...salesTemplates, ...supportDeskPack.templates], { reports: [] });
    const names = registry.tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['query_metrics', TOOL]));
  });
});
