/**
 * billing_reporting: the only relations of this pack the reader may see, and its rights on them: USAGE
 * on the schema and SELECT on the columns the tools read, nothing in `billing`. An account shows its
 * country only: its company's name and its email stay in `billing`, where no view reads them.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export function readerViews(role: string): Migration {
  const reader = sql.id(role);
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await sql`create schema billing_reporting`.execute(db);
      await sql`create view billing_reporting.accounts as select id, country from billing.accounts`.execute(db);
      await sql`
        create view billing_reporting.subscriptions as
        select id, account_id, plan, currency, monthly_amount, started_at, ended_at from billing.subscriptions`.execute(
        db,
      );
      await sql`
        create view billing_reporting.invoices as
        select id, subscription_id, currency, amount, status, issued_at from billing.invoices`.execute(db);
      await sql`
        create view billing_reporting.events as
        select id, account_id, occurred_at, kind from billing.events`.execute(db);
      await sql`revoke all on schema billing_reporting from public`.execute(db);
      await sql`revoke all on all tables in schema billing_reporting from public`.execute(db);
      await sql`grant usage on schema billing_reporting to ${reader}`.execute(db);
      await sql`grant select (id, country) on billing_reporting.accounts to ${reader}`.execute(db);
      await sql`
        grant select (id, account_id, plan, currency, monthly_amount, started_at, ended_at)
           on billing_reporting.subscriptions to ${reader}`.execute(db);
      await sql`
        grant select (id, subscription_id, currency, amount, status, issued_at)
           on billing_reporting.invoices to ${reader}`.execute(db);
      await sql`grant select (id, account_id, occurred_at, kind) on billing_reporting.events to ${reader}`.execute(db);
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await sql`drop schema billing_reporting cascade`.execute(db);
    },
  };
}
