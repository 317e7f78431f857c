/**
 * The reader asks for a custom plan on every execution through its role, where a connection pooler
 * that drops startup parameters cannot undo it. (This migration also made the first rollup's triggers
 * run as their owner; the rollups are 0022's now, and the engine makes every one so.)
 */
import { sql, type Kysely, type Migration } from 'kysely';

export function rollupHardening(role: string): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      const { rows } = await sql<{
        config: string[] | null;
      }>`select rolconfig as config from pg_roles where rolname = ${role}`.execute(db);
      if (!(rows[0]?.config ?? []).includes('plan_cache_mode=force_custom_plan')) {
        await sql`alter role ${sql.id(role)} set plan_cache_mode = force_custom_plan`.execute(db);
      }
    },
    async down(): Promise<void> {
      // The role keeps its setting: it was never undone.
    },
  };
}
