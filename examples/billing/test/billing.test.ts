/**
 * query_billing, one tool over three fact tables, through a real MCP client: a stock (MRR, running
 * subscriptions, subscribed accounts and their ratio, as of an instant) and a flow (invoiced), held to
 * figures computed here in plain JavaScript from the `billing` tables read through the admin
 * connection. The instants a stock is measured at are the ends of local days, weeks and months in
 * Europe/Berlin (clocks forward on 2025-03-30) and UTC, asked of PostgreSQL's zone rules by the admin;
 * a range still running is measured at the current minute on a fixed clock, or where the data stop.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, structured, textOf, type Harness } from '../../../test/support/harness.js';
import { createPackScratchDatabase, type ScratchDatabase } from '../../../test/support/scratch.js';
import { billingPack } from '../pack/index.js';

const TOOL = 'query_billing';
type Figures = Record<string, unknown>;
interface Answer {
  rows?: Figures[];
  totals: Figures[];
  until?: string;
}
interface Subscription {
  account: number;
  plan: string;
  currency: string;
  /** The monthly amount in cents. */
  cents: number;
  country: string;
  started: number;
  ended: number | null;
}
interface Invoice {
  plan: string;
  currency: string;
  cents: number;
  status: string;
  /** Its local day in each zone. */
  day: Record<string, string>;
}

let scratch: ScratchDatabase;
let admin: pg.Client;
let subscriptions: Subscription[];
let invoices: Invoice[];
/** The newest invoice or event. */
let dataThrough: number;

beforeAll(async () => {
  // A database of its own: two tests add a subscription the pack's other suites would count.
  scratch = await createPackScratchDatabase('billing', billingPack);
  admin = scratch.admin;
  const subs = await admin.query<{
    account_id: number;
    plan: string;
    currency: string;
    cents: string;
    country: string;
    started_at: Date;
    ended_at: Date | null;
  }>(
    `select s.account_id, s.plan, s.currency, (s.monthly_amount * 100)::bigint as cents, a.country, s.started_at, s.ended_at
       from billing.subscriptions s join billing.accounts a on a.id = s.account_id`,
  );
  subscriptions = subs.rows.map((r) => ({
    account: r.account_id,
    plan: r.plan,
    currency: r.currency,
    cents: Number(r.cents),
    country: r.country,
    started: r.started_at.getTime(),
    ended: r.ended_at === null ? null : r.ended_at.getTime(),
  }));
  const inv = await admin.query<{
    plan: string;
    currency: string;
    cents: string;
    status: string;
    utc: string;
    berlin: string;
  }>(
    `select s.plan, i.currency, (i.amount * 100)::bigint as cents, i.status,
            to_char(i.issued_at at time zone 'UTC', 'YYYY-MM-DD') as utc,
            to_char(i.issued_at at time zone 'Europe/Berlin', 'YYYY-MM-DD') as berlin
       from billing.invoices i join billing.subscriptions s on s.id = i.subscription_id`,
  );
  invoices = inv.rows.map((r) => ({
    plan: r.plan,
    currency: r.currency,
    cents: Number(r.cents),
    status: r.status,
    day: { UTC: r.utc, 'Europe/Berlin': r.berlin },
  }));
  const newest = await admin.query<{ t: Date }>(
    'select greatest((select max(issued_at) from billing.invoices), (select max(occurred_at) from billing.events)) as t',
  );
  dataThrough = newest.rows[0]!.t.getTime();
});
afterAll(async () => scratch?.drop());

/** The instant a local day starts in a zone, by PostgreSQL's zone rules. */
async function dayStart(day: string, timeZone: string): Promise<number> {
  const { rows } = await admin.query<{ t: Date }>('select ($1::date::timestamp at time zone $2) as t', [day, timeZone]);
  return rows[0]!.t.getTime();
}

/** The subscriptions running at an instant: started before it, not ended before it. */
const runningAt = (t: number, list = subscriptions): Subscription[] =>
  list.filter((s) => s.started < t && (s.ended === null || s.ended >= t));

function groupBy<T>(list: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const t of list) out.set(key(t), [...(out.get(key(t)) ?? []), t]);
  return out;
}

const money = (cents: number): number => Math.round(cents) / 100;
const sumCents = (list: readonly { cents: number }[]): number => list.reduce((n, s) => n + s.cents, 0);
/** The stock figures of some running subscriptions. */
const stock = (list: readonly Subscription[]): Figures => ({
  mrr: money(sumCents(list)),
  active_subscriptions: list.length,
  subscribed_accounts: new Set(list.map((s) => s.account)).size,
});
const byKeys =
  (...keys: string[]) =>
  (a: Figures, b: Figures): number => {
    for (const k of keys) {
      const c = String(a[k]).localeCompare(String(b[k]));
      if (c !== 0) return c;
    }
    return 0;
  };

const harnesses: Harness[] = [];
async function harness(timeZone: string, now?: number): Promise<Harness> {
  const h = await startHarness({
    readerUrl: scratch.readerUrl,
    templates: billingPack.templates,
    timeZone,
    ...(now === undefined ? {} : { now: () => now }),
  });
  harnesses.push(h);
  return h;
}
afterAll(async () => {
  for (const h of harnesses) await h.close();
});

async function ask(h: Harness, args: Record<string, unknown>): Promise<Answer> {
  const result = await h.call(TOOL, args);
  if (result.isError) throw new Error(`${TOOL} ${JSON.stringify(args)} failed: ${textOf(result)}`);
  return structured<Answer>(result);
}

describe('query_billing: a stock, as of an instant', () => {
  it('gives MRR and running subscriptions at the end of each Berlin month, per currency; the total is at the range end', async () => {
    const h = await harness('Europe/Berlin');
    // Three whole months (89 days), the second with the clock change: each measured at its last instant.
    const months = ['2025-02-01', '2025-03-01', '2025-04-01'];
    const ends: number[] = [];
    for (const d of ['2025-03-01', '2025-04-01', '2025-05-01']) ends.push(await dayStart(d, 'Europe/Berlin'));
    const out = await ask(h, {
      metrics: ['mrr', 'active_subscriptions'],
      group_by: ['month'],
      start_date: '2025-02-01',
      end_date: '2025-04-30',
    });
    const expected = months.flatMap((month, i) =>
      [...groupBy(runningAt(ends[i]!), (s) => s.currency)].map(([currency, list]) => {
        const { mrr, active_subscriptions } = stock(list);
        return { month, currency, mrr, active_subscriptions };
      }),
    );
    expect([...out.rows!].sort(byKeys('currency', 'month'))).toEqual(expected.sort(byKeys('currency', 'month')));
    // Never the sum of the months: the stock at the end of the range.
    const last = [...groupBy(runningAt(ends[2]!), (s) => s.currency)].map(([currency, list]) => {
      const { mrr, active_subscriptions } = stock(list);
      return { currency, mrr, active_subscriptions };
    });
    expect(out.totals.filter((t) => t.currency !== undefined).sort(byKeys('currency'))).toEqual(
      last.sort(byKeys('currency')),
    );
    expect(runningAt(ends[0]!).length).toBeGreaterThan(50);
    // The months differ: the figures are measured at three instants, not one.
    expect(new Set(out.rows!.filter((r) => r.currency === 'EUR').map((r) => r.mrr)).size).toBe(3);
  });

  it('keeps a currency whose every subscription ended before the range end: its months, and a total of 0', async () => {
    const h = await harness('UTC');
    await admin.query(
      `insert into billing.subscriptions (id, account_id, plan, currency, monthly_amount, started_at, ended_at)
       values (-1, 1, 'team', 'CHF', 95, '2025-02-03T09:00:00Z', '2025-03-20T12:00:00Z')`,
    );
    try {
      const out = await ask(h, {
        metrics: ['mrr'],
        group_by: ['month'],
        start_date: '2025-02-01',
        end_date: '2025-04-30',
      });
      // Running at the end of February only.
      expect(out.rows!.filter((r) => r.currency === 'CHF')).toEqual([
        { month: '2025-02-01', currency: 'CHF', mrr: 95 },
      ]);
      expect(out.totals.filter((t) => t.currency === 'CHF')).toEqual([{ currency: 'CHF', mrr: 0 }]);
    } finally {
      await admin.query('delete from billing.subscriptions where id = -1');
    }
  });

  it('measures each Berlin week at its end, across the clock change, the first and last cut by the range', async () => {
    const h = await harness('Europe/Berlin');
    const range = { start_date: '2025-03-26', end_date: '2025-04-08' };
    // Weeks start on Monday: 2025-03-24 (from the 26th, to the 31st), 2025-03-31, 2025-04-07 (to the 8th).
    const weeks: [string, string][] = [
      ['2025-03-24', '2025-03-31'],
      ['2025-03-31', '2025-04-07'],
      ['2025-04-07', '2025-04-09'],
    ];
    const out = await ask(h, { metrics: ['active_subscriptions'], group_by: ['week'], ...range });
    const expected = [];
    for (const [week, end] of weeks) {
      expected.push({ week, active_subscriptions: runningAt(await dayStart(end, 'Europe/Berlin')).length });
    }
    expect(out.rows!.map((r) => ({ week: r.week, active_subscriptions: r.active_subscriptions }))).toEqual(expected);
  });

  it('measures each Berlin day at its end, which is not the end of the UTC day', async () => {
    const h = await harness('Europe/Berlin');
    const range = { start_date: '2025-03-10', end_date: '2025-04-20' };
    const days: string[] = [];
    for (
      let t = Date.parse(`${range.start_date}T00:00:00Z`);
      t <= Date.parse(`${range.end_date}T00:00:00Z`);
      t += 86_400_000
    ) {
      days.push(new Date(t).toISOString().slice(0, 10));
    }
    const next = (day: string): string =>
      new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    const expected = [];
    let differs = 0;
    for (const day of days) {
      const berlin = runningAt(await dayStart(next(day), 'Europe/Berlin')).length;
      if (berlin !== runningAt(Date.parse(`${next(day)}T00:00:00Z`)).length) differs++;
      expected.push({ day, active_subscriptions: berlin });
    }
    const out = await ask(h, { metrics: ['active_subscriptions'], group_by: ['day'], ...range });
    expect(out.rows!.map((r) => ({ day: r.day, active_subscriptions: r.active_subscriptions }))).toEqual(expected);
    // The zone matters on these days: measured at UTC midnights, some figures would differ.
    expect(differs).toBeGreaterThan(0);
  });

  it('gives subscribed accounts and ARPA by country as of the end of a UTC month', async () => {
    const h = await harness('UTC');
    const at = Date.parse('2025-05-01T00:00:00Z');
    const out = await ask(h, {
      metrics: ['subscribed_accounts', 'arpa'],
      group_by: ['country'],
      start_date: '2025-04-01',
      end_date: '2025-04-30',
    });
    const expected = [];
    for (const [key, list] of groupBy(runningAt(at), (s) => `${s.country}|${s.currency}`)) {
      const [country, currency] = key.split('|');
      const accounts = new Set(list.map((s) => s.account)).size;
      expected.push({ country, currency, subscribed_accounts: accounts, arpa: money(sumCents(list) / accounts) });
    }
    expect([...out.rows!].sort(byKeys('currency', 'country'))).toEqual(expected.sort(byKeys('currency', 'country')));
  });

  it('answers "MRR this month" as of the current minute on a fixed clock', async () => {
    const now = Date.parse('2025-06-18T09:30:27Z');
    const h = await harness('UTC', now);
    const out = await ask(h, { metrics: ['mrr'], period: 'this_month' });
    const at = Date.parse('2025-06-18T09:30:00Z');
    expect(Date.parse(out.until!)).toBe(Date.parse('2025-06-18T09:30:00Z'));
    const expected = [...groupBy(runningAt(at), (s) => s.currency)].map(([currency, list]) => ({
      currency,
      mrr: stock(list).mrr,
    }));
    expect(out.totals.filter((t) => t.currency !== undefined).sort(byKeys('currency'))).toEqual(
      expected.sort(byKeys('currency')),
    );
    // Subscriptions the data hold from later that month are not running yet.
    expect(subscriptions.some((s) => s.started > at && s.started < Date.parse('2025-07-01T00:00:00Z'))).toBe(true);
  });

  it('compares subscriptions this month with the 30 days before, cut at the same time of day', async () => {
    const h = await harness('UTC', Date.parse('2025-06-18T09:30:27Z'));
    const out = (await ask(h, {
      metrics: ['active_subscriptions'],
      period: 'this_month',
      compare_to: 'previous_period',
    })) as Answer & {
      comparison: { start_date: string; until?: string; totals: Figures[] };
    };
    const now = runningAt(Date.parse('2025-06-18T09:30:00Z')).length;
    // June is 30 days: the period before is 2025-05-02..2025-05-31, cut 30 days before now.
    const prior = runningAt(Date.parse('2025-05-19T09:30:00Z')).length;
    expect(out.comparison.start_date).toBe('2025-05-02');
    expect(Date.parse(out.comparison.until!)).toBe(Date.parse('2025-05-19T09:30:00Z'));
    expect(out.totals[0]).toMatchObject({ active_subscriptions: now });
    expect(out.comparison.totals).toHaveLength(1);
    expect(out.comparison.totals[0]).toMatchObject({ active_subscriptions: prior });
    expect(now).not.toBe(prior);
  });

  it('answers "MRR this month" where the data stop, when they stop before now', async () => {
    const h = await harness('UTC', Date.parse('2025-07-10T12:00:00Z'));
    // A subscription the data hold from after they stop (scheduled, or loaded apart from the invoices
    // and events that say how far the feed has come): measured at now or at the month's end, it would count.
    await admin.query(
      `insert into billing.subscriptions (id, account_id, plan, currency, monthly_amount, started_at, ended_at)
       values (-2, 1, 'enterprise', 'USD', 499, '2025-07-05T08:00:00Z', null)`,
    );
    try {
      const out = await ask(h, { metrics: ['mrr'], period: 'this_month' });
      // The data stop on 2025-06-30: the range is cut at the minute after, no earlier than its first instant.
      const at = Math.max(Math.floor(dataThrough / 60_000) * 60_000 + 60_000, Date.parse('2025-07-01T00:00:00Z'));
      expect(at).toBe(Date.parse('2025-07-01T00:00:00Z'));
      const expected = [...groupBy(runningAt(at), (s) => s.currency)].map(([currency, list]) => ({
        currency,
        mrr: stock(list).mrr,
      }));
      expect(out.totals.filter((t) => t.currency !== undefined).sort(byKeys('currency'))).toEqual(
        expected.sort(byKeys('currency')),
      );
    } finally {
      await admin.query('delete from billing.subscriptions where id = -2');
    }
  });
});

describe('query_billing: a flow, and one fact table a call', () => {
  it('sums what was invoiced by plan over Berlin days, void invoices left out, per currency', async () => {
    const h = await harness('Europe/Berlin');
    const range = { start_date: '2025-03-01', end_date: '2025-03-31' };
    const list = invoices.filter(
      (i) => i.day['Europe/Berlin']! >= range.start_date && i.day['Europe/Berlin']! <= range.end_date,
    );
    const out = await ask(h, { metrics: ['invoiced', 'invoices'], group_by: ['plan'], ...range });
    const expected = [...groupBy(list, (i) => `${i.plan}|${i.currency}`)].map(([key, group]) => {
      const [plan, currency] = key.split('|');
      return {
        plan,
        currency,
        invoiced: money(sumCents(group.filter((i) => i.status !== 'void'))),
        invoices: group.length,
      };
    });
    expect([...out.rows!].sort(byKeys('currency', 'plan'))).toEqual(expected.sort(byKeys('currency', 'plan')));
    expect(list.some((i) => i.status === 'void')).toBe(true);
  });

  it('refuses metrics of two fact tables in one call, and a stock by hour, naming the fields and the rule', async () => {
    const h = await harness('UTC');
    const range = { start_date: '2025-04-01', end_date: '2025-04-30' };
    const mixed = await h.call(TOOL, { metrics: ['mrr', 'invoiced'], ...range });
    expect(mixed.isError).toBe(true);
    expect(textOf(mixed)).toContain('metrics');
    expect(textOf(mixed)).toContain('different fact tables (mrr: subscriptions; invoiced: invoices)');
    const hourly = await h.call(TOOL, { metrics: ['mrr'], group_by: ['hour_of_day'], ...range });
    expect(hourly.isError).toBe(true);
    expect(textOf(hourly)).toContain('a stock is a figure as of an instant');
    // By an attribute of another fact table: the invoices' status is no subscription's.
    const status = await h.call(TOOL, { metrics: ['mrr'], group_by: ['status'], ...range });
    expect(status.isError).toBe(true);
    expect(textOf(status)).toContain('mrr cannot be computed with status');
  });

  it('serves the three fact tables as one tool', async () => {
    const h = await harness('UTC');
    const { tools } = await h.client.listTools();
    expect(tools.map((t) => t.name)).toEqual([TOOL]);
    expect(billingPack.templates.map((t) => t.name)).toEqual([TOOL]);
  });
});
