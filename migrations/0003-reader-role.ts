/**
 * The read-only role: it may SELECT the reporting views and nothing else. Read-only transactions,
 * a statement timeout and a pinned search_path are role settings, so they hold for any client.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export function readerRole(role: string): Migration {
  const reader = sql.id(role);
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // Roles belong to the cluster, not the database: with several databases in one cluster the role
      // may exist already. It is changed only where it differs, so that migrations of two databases
      // running at once do not update the same catalog row.
      const existing = await sql<{ safe: boolean; config: string[] | null }>`
        select (rolcanlogin and not rolsuper and not rolcreatedb and not rolcreaterole and not rolinherit
                and not rolreplication and not rolbypassrls) as safe, rolconfig as config
          from pg_roles where rolname = ${role}`.execute(db);
      const found = existing.rows[0];
      if (!found) {
        await sql`create role ${reader} login nosuperuser nocreatedb nocreaterole noinherit noreplication nobypassrls`.execute(
          db,
        );
      } else if (!found.safe) {
        await sql`alter role ${reader} login nosuperuser nocreatedb nocreaterole noinherit noreplication nobypassrls`.execute(
          db,
        );
      }
      const config = new Set(found?.config ?? []);
      if (!config.has('default_transaction_read_only=on')) {
        await sql`alter role ${reader} set default_transaction_read_only = on`.execute(db);
      }
      if (!config.has('statement_timeout=5s')) await sql`alter role ${reader} set statement_timeout = '5s'`.execute(db);
      if (!config.has('idle_in_transaction_session_timeout=10s')) {
        await sql`alter role ${reader} set idle_in_transaction_session_timeout = '10s'`.execute(db);
      }
      if (!config.has('search_path=reporting')) await sql`alter role ${reader} set search_path = reporting`.execute(db);

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
