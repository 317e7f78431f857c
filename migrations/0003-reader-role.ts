/**
 * The read-only role: it may SELECT the reporting views and nothing else. Read-only transactions,
 * a statement timeout and a pinned search_path are role settings, so they hold for any client.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export function readerRole(role: string): Migration {
  const reader = sql.id(role);
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      const exists = await sql`select 1 from pg_roles where rolname = ${role}`.execute(db);
      if (exists.rows.length === 0) {
        await sql`create role ${reader} login nosuperuser nocreatedb nocreaterole noinherit noreplication nobypassrls`.execute(
          db,
        );
      } else {
        await sql`alter role ${reader} login nosuperuser nocreatedb nocreaterole noinherit noreplication nobypassrls`.execute(
          db,
        );
      }
      await sql`alter role ${reader} set default_transaction_read_only = on`.execute(db);
      await sql`alter role ${reader} set statement_timeout = '5s'`.execute(db);
      await sql`alter role ${reader} set idle_in_transaction_session_timeout = '10s'`.execute(db);
      await sql`alter role ${reader} set search_path = reporting`.execute(db);

      const { rows } = await sql<{ name: string }>`select current_database() as name`.execute(db);
      const database = sql.id(rows[0]!.name);
      // PUBLIC may connect but not create temporary tables; nobody but the owner creates in public.
      await sql`revoke temporary on database ${database} from public`.execute(db);
      await sql`grant connect on database ${database} to ${reader}`.execute(db);
      await sql`revoke create on schema public from public`.execute(db);
      await sql`revoke all on schema sales from public`.execute(db);
      await sql`revoke all on all tables in schema sales from public`.execute(db);

      await sql`revoke all on schema reporting from public`.execute(db);
      await sql`grant usage on schema reporting to ${reader}`.execute(db);
      await sql`grant select on reporting.orders, reporting.order_items, reporting.products, reporting.customers to ${reader}`.execute(
        db,
      );
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await sql`revoke all on all tables in schema reporting from ${reader}`.execute(db);
      await sql`revoke all on schema reporting from ${reader}`.execute(db);
    },
  };
}
