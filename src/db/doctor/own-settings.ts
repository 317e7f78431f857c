import { READER_TEMP_FILE_LIMIT } from '../reader-role.js';
import type { ReaderUnderCheck, SafetyCheck } from './check.js';

/**
 * What the reader may change about its own session. Every parameter of context "user" can be SET by
 * any role, and no grant or role setting can stop it: statement_timeout, read-only mode and work_mem
 * bind querygate's own connections (the server sets them on each) but not a person who connects
 * with the reader's password. temp_file_limit can be set only by a superuser, so, set on the role,
 * it bounds the temporary files of every session of the reader.
 */
export async function ownSettings({ client, role }: ReaderUnderCheck): Promise<SafetyCheck[]> {
  const { rows } = await client.query<{ name: string }>(
    `select name from pg_settings where context = 'user' order by name`,
  );
  const userSettable = new Set(rows.map((r) => r.name));
  // What bounds such a session anyway: how many of them the role may open at once.
  const { rows: connRows } = await client.query<{ connections: number }>(
    `select rolconnlimit as connections from pg_roles where rolname = current_user`,
  );
  const connectionLimit = connRows[0]!.connections;
  const named = [
    'statement_timeout',
    'default_transaction_read_only',
    'idle_in_transaction_session_timeout',
    'work_mem',
  ].filter((name) => userSettable.has(name));
  const checks: SafetyCheck[] = [
    {
      name: 'settings a direct session can change',
      ok: true,
      warning: true,
      detail:
        `${named.join(', ')} and ${userSettable.size - named.length} more, held only on the server's own connections;` +
        ` a direct session is bounded by temp_file_limit and the role's connection limit (${connectionLimit < 0 ? 'none' : connectionLimit})`,
    },
  ];

  const { rows: limitRows } = await client.query<{ setting: string; shown: string; version: number }>(
    `select setting, current_setting('temp_file_limit') as shown, current_setting('server_version_num')::int as version
       from pg_settings where name = 'temp_file_limit'`,
  );
  const limit = limitRows[0]!;
  // Since PostgreSQL 15 a superuser may GRANT SET on a superuser-only parameter.
  const liftable =
    limit.version >= 150_000 &&
    (await client.query<{ liftable: boolean }>(`select has_parameter_privilege('temp_file_limit', 'SET') as liftable`))
      .rows[0]!.liftable;
  const unlimited = limit.setting === '-1';
  checks.push({
    name: 'temp_file_limit is set and cannot be lifted',
    ok: true,
    ...(liftable
      ? {
          warning: true,
          detail: 'the reader holds SET on it',
          fix: `REVOKE SET ON PARAMETER temp_file_limit FROM ${role};`,
        }
      : unlimited
        ? {
            warning: true,
            detail: 'is -1 (none); only a superuser can set it',
            fix: `ALTER ROLE ${role} SET temp_file_limit = '${READER_TEMP_FILE_LIMIT}';`,
          }
        : { detail: `is ${limit.shown}` }),
  });
  return checks;
}
