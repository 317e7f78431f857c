/**
 * query_billing through a real MCP client, held to figures computed here from the table the views read,
 * through the admin connection: each event's local day in UTC and in Europe/Berlin (whose clocks go
 * forward on 2025-03-30), counted in plain JavaScript.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAdmin, startHarness, structured, textOf, type Harness } from '../../../test/support/harness.js';
import { readerUrlFor } from '../../../test/support/packs.js';
import { billingPack } from '../pack/index.js';

const TOOL = 'query_billing';
const ZONES = ['UTC', 'Europe/Berlin'] as const;
const RANGE = { start_date: '2025-03-15', end_date: '2025-04-13' };

let admin: pg.Client;
let events: { kind: string; day: Record<string, string> }[];
const harnesses = new Map<string, Harness>();

beforeAll(async () => {
  admin = await connectAdmin();
  const { rows } = await admin.query<{ kind: string; utc: string; berlin: string }>(
    `select kind, to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD') as utc,
            to_char(occurred_at at time zone 'Europe/Berlin', 'YYYY-MM-DD') as berlin
       from billing.events`,
  );
  events = rows.map((r) => ({ kind: r.kind, day: { UTC: r.utc, 'Europe/Berlin': r.berlin } }));
  for (const timeZone of ZONES) {
    harnesses.set(
      timeZone,
      await startHarness({ readerUrl: readerUrlFor(billingPack), templates: billingPack.templates, timeZone }),
    );
  }
});
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
  await admin.end();
});

describe.each(ZONES)(`${TOOL} in %s`, (timeZone) => {
  it('counts the events of each kind in the range, biggest first, with the exact total', async () => {
    const inRange = events.filter((e) => e.day[timeZone]! >= RANGE.start_date && e.day[timeZone]! <= RANGE.end_date);
    const counts = new Map<string, number>();
    for (const e of inRange) counts.set(e.kind, (counts.get(e.kind) ?? 0) + 1);
    const expected = [...counts]
      .map(([kind, n]) => ({ kind, events: n }))
      .sort((a, b) => b.events - a.events || a.kind.localeCompare(b.kind));
    const result = await harnesses.get(timeZone)!.call(TOOL, { ...RANGE, metrics: ['events'], group_by: ['kind'] });
    if (result.isError) throw new Error(textOf(result));
    const out = structured<{ rows: Record<string, unknown>[]; totals: Record<string, unknown>[] }>(result);
    expect(out.rows).toEqual(expected);
    expect(out.totals).toEqual([{ events: inRange.length }]);
    expect(inRange.length).toBeGreaterThan(100);
  });
});
