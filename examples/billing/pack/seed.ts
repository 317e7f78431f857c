/**
 * The pack's test data: `npm test` makes the table the views read (createTables, in the test database
 * only) and fills it (run), deterministically, up to the suite's last day. `querygate seed` runs it too.
 * It writes as the admin; nothing the reader runs imports it.
 */
import { prng, pick } from '../../../src/db/demo-data.js';
import { ConfigError } from '../../../src/lib/errors.js';
import { withAdmin } from '../../../src/db/connect.js';
import type { PackSeed } from '../../../src/pack.js';
import { COUNTRIES, CURRENCIES, EVENT_KINDS, PLANS } from './metrics.js';

/** The monthly price of each plan in each currency of CURRENCIES. */
const PRICES: Record<(typeof PLANS)[number], readonly number[]> = {
  starter: [29, 27, 24],
  team: [99, 92, 79],
  enterprise: [499, 459, 399],
};
const DAY_MS = 86_400_000;
/** How far back the accounts' subscriptions start: 18 months. */
const SPAN_DAYS = 548;

/**
 * The billing data of `count` accounts, made in JavaScript from a fixed pseudo-random sequence: each
 * account subscribes once or twice (a later subscription after an earlier one ends: an upgrade or a
 * return), in one currency; each subscription is invoiced monthly from its start while it runs, up to
 * the last day; some invoices are still open, a few void. And the starter table of events.
 */
function billingRows(count: number, until: string) {
  const rand = prng(0xb111 ^ count);
  const end = Date.parse(`${until}T00:00:00Z`) + DAY_MS;
  const start = end - SPAN_DAYS * DAY_MS;
  const accounts: [number, string, string, string][] = [];
  const subscriptions: [number, number, string, string, string, string, string | null][] = [];
  const invoices: [number, number, string, string, string, string][] = [];
  const iso = (ms: number): string => new Date(ms).toISOString();
  for (let a = 1; a <= count; a++) {
    const created = start + Math.floor(rand() * (SPAN_DAYS - 30) * DAY_MS);
    const currency = pick(rand, CURRENCIES);
    accounts.push([a, `Company ${a}`, `billing@company${a}.example.com`, pick(rand, COUNTRIES)]);
    let from = created;
    const times = rand() < 0.3 ? 2 : 1;
    for (let t = 0; t < times && from < end; t++) {
      const plan = PLANS[Math.min(t + Math.floor(rand() * 2.2), 2)]!;
      const seats = 1 + Math.floor(rand() * 3);
      const monthly = PRICES[plan][CURRENCIES.indexOf(currency)]! * seats;
      // Most run on; some end after a few months (at a random minute), cancelled.
      const ended =
        rand() < 0.35 ? from + Math.floor((30 + rand() * 300) * DAY_MS) + Math.floor(rand() * 1440) * 60_000 : null;
      const id = subscriptions.length + 1;
      subscriptions.push([
        id,
        a,
        plan,
        currency,
        monthly.toFixed(2),
        iso(from),
        ended !== null && ended < end ? iso(ended) : null,
      ]);
      for (let m = 0; ; m++) {
        const issued = new Date(from);
        issued.setUTCMonth(issued.getUTCMonth() + m);
        const at = issued.getTime();
        if (at >= end || (ended !== null && at >= ended)) break;
        const roll = rand();
        const status = end - at < 20 * DAY_MS && roll < 0.5 ? 'open' : roll < 0.03 ? 'void' : 'paid';
        invoices.push([invoices.length + 1, id, currency, monthly.toFixed(2), status, iso(at)]);
      }
      if (ended === null || ended >= end) break;
      from = ended + Math.floor(rand() * 60) * DAY_MS;
    }
  }
  return { accounts, subscriptions, invoices };
}

export const seed: PackSeed = {
  unit: 'accounts',
  defaultCount: 2000,
  testCount: 400,
  createTables: (adminUrl) =>
    withAdmin(adminUrl, async (admin) => {
      await admin.query('create schema if not exists billing');
      await admin.query(
        `create table if not exists billing.accounts (
           id integer primary key,
           company_name text not null,
           email text not null,
           country text not null)`,
      );
      await admin.query(
        `create table if not exists billing.subscriptions (
           id integer primary key,
           account_id integer not null references billing.accounts,
           plan text not null,
           currency text not null,
           monthly_amount numeric(12, 2) not null,
           started_at timestamptz not null,
           ended_at timestamptz,
           check (ended_at is null or ended_at > started_at))`,
      );
      await admin.query(
        `create table if not exists billing.invoices (
           id integer primary key,
           subscription_id integer not null references billing.subscriptions,
           currency text not null,
           amount numeric(12, 2) not null,
           status text not null,
           issued_at timestamptz not null)`,
      );
      await admin.query(
        `create table if not exists billing.events (
           id bigint generated always as identity primary key,
           account_id integer not null,
           occurred_at timestamptz not null,
           kind text not null)`,
      );
      await admin.query('create index if not exists events_occurred_at on billing.events (occurred_at)');
      await admin.query('create index if not exists invoices_issued_at on billing.invoices (issued_at)');
    }),
  isEmpty: async (admin) =>
    (await admin.query<{ empty: boolean }>('select not exists (select 1 from billing.accounts) as empty')).rows[0]!
      .empty,
  run: (adminUrl, request) =>
    withAdmin(adminUrl, async (admin) => {
      const count = request.count ?? 2000;
      if (!Number.isInteger(count) || count < 1) throw new ConfigError('--count: must be a positive whole number');
      if (request.replace) {
        await admin.query(
          'truncate billing.invoices, billing.subscriptions, billing.accounts, billing.events restart identity',
        );
      } else if (!(await seed.isEmpty(admin))) {
        throw new ConfigError('the database already holds accounts; pass --replace to replace them with demo data');
      }
      const { accounts, subscriptions, invoices } = billingRows(count, request.until);
      const columns = <T extends unknown[]>(rows: T[]): unknown[][] => rows[0]!.map((_, i) => rows.map((r) => r[i]));
      await admin.query('begin');
      await admin.query(
        `insert into billing.accounts (id, company_name, email, country)
         select * from unnest($1::int[], $2::text[], $3::text[], $4::text[])`,
        columns(accounts),
      );
      await admin.query(
        `insert into billing.subscriptions (id, account_id, plan, currency, monthly_amount, started_at, ended_at)
         select * from unnest($1::int[], $2::int[], $3::text[], $4::text[], $5::numeric[], $6::timestamptz[], $7::timestamptz[])`,
        columns(subscriptions),
      );
      await admin.query(
        `insert into billing.invoices (id, subscription_id, currency, amount, status, issued_at)
         select * from unnest($1::int[], $2::int[], $3::text[], $4::numeric[], $5::text[], $6::timestamptz[])`,
        columns(invoices),
      );
      // The starter events: spread over the 120 days up to the last day (UTC), minute by minute.
      await admin.query(
        `insert into billing.events (account_id, occurred_at, kind)
         select 1 + (g * 7) % $4::int,
                (($1::date + 1)::timestamp at time zone 'UTC') - make_interval(mins => 1 + (g * 7919) % 172800),
                ($3::text[])[1 + (g * 31) % 3]
           from generate_series(0, $2::int - 1) as g`,
        [request.until, count * 5, [...EVENT_KINDS], count],
      );
      await admin.query('commit');
      await admin.query('analyze billing.accounts, billing.subscriptions, billing.invoices, billing.events');
      return { accounts: count, subscriptions: subscriptions.length, invoices: invoices.length };
    }),
};
