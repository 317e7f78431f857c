/**
 * The relations the reader can see (the views of billing_reporting, migrations/0001-reader-views.ts),
 * their types, and what each column is. Once the views read your own tables, generate the types from
 * them: `npm run codegen -- <this folder>` writes pack/schema.generated.ts; then export its DB here.
 */
import { sql } from 'kysely';
import type { HighWaterMark, NotPersonalColumns, PersonalColumns } from '../../../src/pack.js';

export interface BillingDatabase {
  'billing_reporting.accounts': { id: number; country: string };
  'billing_reporting.subscriptions': {
    id: number;
    account_id: number;
    plan: string;
    currency: string;
    monthly_amount: string;
    started_at: Date;
    ended_at: Date | null;
  };
  'billing_reporting.invoices': {
    id: number;
    subscription_id: number;
    currency: string;
    amount: string;
    status: string;
    issued_at: Date;
  };
  'billing_reporting.events': { id: number; account_id: number; occurred_at: Date; kind: string };
}

/**
 * Every column that must never leave raw: ids (they leave as tokens), names, emails, phones. Ids and
 * initials are personal: an id joins a row to a person, initials narrow a person down.
 */
export const PERSONAL_COLUMNS: PersonalColumns<BillingDatabase> = {
  'billing_reporting.accounts.id': { kind: 'internal_id', entity: 'account' },
  'billing_reporting.subscriptions.id': { kind: 'internal_id', entity: 'subscription' },
  'billing_reporting.subscriptions.account_id': { kind: 'internal_id', entity: 'account' },
  'billing_reporting.invoices.id': { kind: 'internal_id', entity: 'invoice' },
  'billing_reporting.invoices.subscription_id': { kind: 'internal_id', entity: 'subscription' },
  'billing_reporting.events.id': { kind: 'internal_id', entity: 'event' },
  'billing_reporting.events.account_id': { kind: 'internal_id', entity: 'account' },
};

/** Every other column the reader can read. A readable column in neither list stops the server. */
export const NOT_PERSONAL_COLUMNS: NotPersonalColumns<BillingDatabase> = [
  'billing_reporting.accounts.country',
  'billing_reporting.subscriptions.plan',
  'billing_reporting.subscriptions.currency',
  'billing_reporting.subscriptions.monthly_amount',
  'billing_reporting.subscriptions.started_at',
  'billing_reporting.subscriptions.ended_at',
  'billing_reporting.invoices.currency',
  'billing_reporting.invoices.amount',
  'billing_reporting.invoices.status',
  'billing_reporting.invoices.issued_at',
  'billing_reporting.events.occurred_at',
  'billing_reporting.events.kind',
];

/**
 * How far the data reach: the newest invoice or event (each one index probe). A subscription's start
 * or end is not a load: the invoices and events show how far the feed has come.
 */
export const DATA_THROUGH: HighWaterMark<BillingDatabase> = (db) =>
  db.selectNoFrom(
    sql<Date>`greatest(
      (${db.selectFrom('billing_reporting.invoices').select((eb) => eb.fn.max('issued_at').as('t'))}),
      (${db.selectFrom('billing_reporting.events').select((eb) => eb.fn.max('occurred_at').as('t'))}))`.as(
      'data_through',
    ),
  );
