/**
 * The reader role every pack's grants go to, made safe before any pack's migrations run: a leaf
 * login role with no rights but CONNECT, read-only transactions and timeouts as role settings (so
 * they hold for any client), and temp_file_limit where the admin may set it. A pack's migrations
 * then grant it USAGE and SELECT on what its templates read, and nothing else.
 */
import { sql, type Kysely } from 'kysely';

/** The cap on a reader session's temporary files; only a superuser can lift it. */
export const READER_TEMP_FILE_LIMIT = '1GB';

export async function ensureReaderRole(db: Kysely<unknown>, role: string): Promise<void> {
  const reader = sql.id(role);
  await db.transaction().execute(async (tx) => {
    const config = new Set(await ensureLeafRole(tx, role));
    if (!config.has('default_transaction_read_only=on')) {
      await sql`alter role ${reader} set default_transaction_read_only = on`.execute(tx);
    }
    if (![...config].some((c) => c.startsWith('statement_timeout='))) {
      await sql`alter role ${reader} set statement_timeout = '5s'`.execute(tx);
    }
    if (![...config].some((c) => c.startsWith('idle_in_transaction_session_timeout='))) {
      await sql`alter role ${reader} set idle_in_transaction_session_timeout = '10s'`.execute(tx);
    }
    if (![...config].some((c) => c.startsWith('temp_file_limit='))) await setTempFileLimit(tx, role);
    const { rows } = await sql<{ name: string }>`select current_database() as name`.execute(tx);
    const database = sql.id(rows[0]!.name);
    // PUBLIC may connect but not create temporary tables; nobody but the owner creates in public.
    await sql`revoke temporary on database ${database} from public`.execute(tx);
    await sql`grant connect on database ${database} to ${reader}`.execute(tx);
    await sql`revoke create on schema public from public`.execute(tx);
  });
}

/**
 * Creates a login role that is a leaf (no superuser, CREATEDB, CREATEROLE, INHERIT, REPLICATION or
 * BYPASSRLS), or makes an existing one so, inside the caller's transaction; gives its settings. Roles
 * belong to the cluster, not the database: with several databases in one cluster the role may exist
 * already. It is changed only where it differs, so that two databases being prepared at once do not
 * update the same catalog row.
 */
export async function ensureLeafRole(tx: Kysely<unknown>, role: string): Promise<string[]> {
  const id = sql.id(role);
  const existing = await sql<{ safe: boolean; config: string[] | null }>`
    select (rolcanlogin and not rolsuper and not rolcreatedb and not rolcreaterole and not rolinherit
            and not rolreplication and not rolbypassrls) as safe, rolconfig as config
      from pg_roles where rolname = ${role}`.execute(tx);
  const found = existing.rows[0];
  const attributes = sql`login nosuperuser nocreatedb nocreaterole noinherit noreplication nobypassrls`;
  if (!found) await sql`create role ${id} ${attributes}`.execute(tx);
  else if (!found.safe) await sql`alter role ${id} ${attributes}`.execute(tx);
  return found?.config ?? [];
}

/**
 * Puts READER_TEMP_FILE_LIMIT on the role, inside the caller's transaction. The parameter is
 * superuser-only: an admin without the right leaves it unset (the refusal is rolled back to a
 * savepoint so the transaction goes on), and `doctor` warns with the statement to run.
 */
export async function setTempFileLimit(db: Kysely<unknown>, role: string): Promise<void> {
  await sql`savepoint querygate_reader_limits`.execute(db);
  try {
    // ALTER ROLE … SET takes no bind parameter; the value is this module's constant, never a caller's.
    await sql`alter role ${sql.id(role)} set temp_file_limit = ${sql.lit(READER_TEMP_FILE_LIMIT)}`.execute(db);
    await sql`release savepoint querygate_reader_limits`.execute(db);
  } catch (err) {
    if ((err as { code?: unknown }).code !== '42501') throw err;
    await sql`rollback to savepoint querygate_reader_limits`.execute(db);
  }
}
