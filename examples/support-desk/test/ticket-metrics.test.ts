/**
 * query_ticket_metrics, the tool the desk's metric declarations derive (pack/metrics.ts), through a
 * real MCP client: each question in one call, held to figures computed here in plain JavaScript from
 * the raw `support` tables read through the admin connection (each ticket's local day and hour
 * included; nothing of the server's statement), in UTC and in America/Havana (whose clocks jump from
 * 00:00 to 01:00 on 2025-03-09); small groups of requesters hidden from every figure; and the tool
 * served beside the sales pack's query_metrics.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { templates as salesTemplates } from '../../../queries/index.js';
import { createRegistry } from '../../../src/registry/index.js';
import { connectAdmin, startHarness, structured, textOf, type Harness } from '../../../test/support/harness.js';
import { readerUrlFor } from '../../../test/support/packs.js';
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
  suppressed_groups: number;
}

let admin: pg.Client;
let tickets: Ticket[];
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

/**
 * What the tool may show of some tickets (the range and filters already applied): the tickets of every
 * team × priority × status cell from fewer requesters than the threshold are left out of every figure,
 * then every group, and the totals, of fewer requesters; `suppressed` counts both.
 */
function shown(list: Ticket[], key?: (t: Ticket) => string | number) {
  const cell = (t: Ticket): string => `${t.team}|${t.priority}|${t.status}`;
  const people = (ts: Ticket[]): number => new Set(ts.map((t) => t.requester)).size;
  const hidden = new Set([...groupBy(list, cell)].filter(([, ts]) => people(ts) < THRESHOLD).map(([c]) => c));
  const visible = list.filter((t) => !hidden.has(cell(t)));
  const groups = key ? [...groupBy(visible, key)] : [];
  const kept = groups.filter(([, ts]) => people(ts) >= THRESHOLD);
  return { hidden, visible, kept, suppressed: hidden.size + groups.length - kept.length };
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
    const { visible, kept, suppressed, hidden } = shown(list, (t) => t.team);
    const expected = kept.map(([team, ts]) => ({ team, ...figures(ts) }));
    const out = await ask(h(), { metrics: ['tickets', 'resolved_tickets', 'resolution_rate'], group_by: ['team'] });
    expect(out.rows).toEqual(ranked(expected, 'tickets', 'team'));
    expect(out.totals).toEqual([figures(visible)]);
    // No metric counts people, yet the desk hides small groups from every answer.
    expect(out.suppressed_groups).toBe(suppressed);
    expect(hidden.size).toBeGreaterThan(0);
    expect(list.length).toBeGreaterThan(300);
  });

  it('counts the urgent tickets by local hour of day', async () => {
    const list = inRange(timeZone).filter((t) => t.priority === 'urgent');
    const { visible, kept, suppressed } = shown(list, (t) => t.local[timeZone]!.hour);
    const out = await ask(h(), { metrics: ['tickets'], group_by: ['hour_of_day'], filters: { priority: ['urgent'] } });
    expect(out.rows).toEqual(
      kept.sort((a, b) => Number(a[0]) - Number(b[0])).map(([hour, ts]) => ({ hour_of_day: hour, tickets: ts.length })),
    );
    expect(out.totals).toEqual(
      new Set(visible.map((t) => t.requester)).size >= THRESHOLD ? [{ tickets: visible.length }] : [],
    );
    expect(out.suppressed_groups).toBe(
      suppressed + (new Set(visible.map((t) => t.requester)).size >= THRESHOLD ? 0 : 1),
    );
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
    const { visible, kept, suppressed } = shown(list, (t) => t.priority);
    const expected = kept.map(([priority, ts]) => ({ priority, ...figures(ts) }));
    const out = await ask(h(), { metrics: ['avg_first_response_hours', 'responded_tickets'], group_by: ['priority'] });
    expect(out.rows).toEqual(ranked(expected, 'avg_first_response_hours', 'priority'));
    expect(out.totals).toEqual([figures(visible)]);
    expect(out.suppressed_groups).toBe(suppressed);
  });

  it('counts distinct requesters by priority, hiding cells and rows of too few requesters from every figure', async () => {
    const list = inRange(timeZone);
    // The engine's cells are every attribute of the source: team, priority and status.
    const cell = (t: Ticket): string => `${t.team}|${t.priority}|${t.status}`;
    const hidden = new Set(
      [...groupBy(list, cell)].filter(([, ts]) => new Set(ts.map((t) => t.requester)).size < THRESHOLD).map(([c]) => c),
    );
    const visible = list.filter((t) => !hidden.has(cell(t)));
    const figures = (ts: Ticket[]): { requesters: number; tickets: number } => ({
      requesters: new Set(ts.map((t) => t.requester)).size,
      tickets: ts.length,
    });
    const groups = [...groupBy(visible, (t) => t.priority)].map(([priority, ts]) => ({ priority, ...figures(ts) }));
    const kept = groups.filter((g) => g.requesters >= THRESHOLD);
    const out = await ask(h(), { metrics: ['requesters', 'tickets'], group_by: ['priority'] });
    expect(out.rows).toEqual(ranked(kept, 'requesters', 'priority'));
    expect(out.totals).toEqual([figures(visible)]);
    expect(out.suppressed_groups).toBe(hidden.size + groups.length - kept.length);
    expect(hidden.size).toBeGreaterThan(0); // the test data has small cells, so the rule is seen at work
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
