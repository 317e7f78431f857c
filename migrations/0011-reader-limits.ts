/**
 * A bound on the reader that the reader cannot lift: temp_file_limit is a superuser-only parameter,
 * so, unlike statement_timeout or work_mem, a session of the role cannot SET it away. It caps the
 * disk that one session's sorts, hashes and held cursors may spill to (temporary tables, which it
 * does not cover, the reader cannot create). Only a superuser (or, since PostgreSQL 15, a role
 * granted SET on it) may put it on a role; an admin without that right leaves it unset, and
 * `querygate doctor` warns with the statement to run.
 */
import { sql, type Kysely, type Migration } from 'kysely';
import { setTempFileLimit } from '../src/db/reader-role.js';

export function readerLimits(role: string): Migration {
  const reader = sql.id(role);
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // Set only where unset, as in 0003: migrations of several databases of one cluster may run at once.
      const { rows } = await sql<{
        config: string[] | null;
      }>`select rolconfig as config from pg_roles where rolname = ${role}`.execute(db);
      if ((rows[0]?.config ?? []).some((entry) => entry.startsWith('temp_file_limit='))) return;
      // The migrations run in one transaction: a refusal must not abort it (see setTempFileLimit).
      await setTempFileLimit(db, role);
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await sql`alter role ${reader} reset temp_file_limit`.execute(db);
    },
  };
}
