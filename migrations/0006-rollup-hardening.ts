/**
 * The rollup's triggers run as their owner, so any role allowed to write sales.orders keeps working
 * without rights on sales.order_hours; and the reader asks for a custom plan on every execution
 * through its role, where a connection pooler that drops startup parameters cannot undo it.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export function rollupHardening(role: string): Migration {
  const reader = sql.id(role);
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const fn of ['order_hours_apply', 'order_hours_truncate']) {
        await sql`alter function ${sql.id('sales', fn)}() security definer set search_path = pg_catalog, sales`.execute(
          db,
        );
        await sql`revoke execute on function ${sql.id('sales', fn)}() from public`.execute(db);
      }
      const { rows } = await sql<{
        config: string[] | null;
      }>`select rolconfig as config from pg_roles where rolname = ${role}`.execute(db);
      if (!(rows[0]?.config ?? []).includes('plan_cache_mode=force_custom_plan')) {
        await sql`alter role ${reader} set plan_cache_mode = force_custom_plan`.execute(db);
      }
    },
    async down(db: Kysely<unknown>): Promise<void> {
      for (const fn of ['order_hours_apply', 'order_hours_truncate']) {
        await sql`alter function ${sql.id('sales', fn)}() security invoker`.execute(db);
      }
    },
  };
}
