import type { ReaderUnderCheck, SafetyCheck } from './check.js';

const DANGEROUS_ROLES = [
  'pg_read_server_files',
  'pg_write_server_files',
  'pg_execute_server_program',
  'pg_read_all_data',
  'pg_write_all_data',
];

/** The predefined roles that read or write the server's files, run programs, or read or write every table. */
export async function noDangerousRoles({ client, role, superuser }: ReaderUnderCheck): Promise<SafetyCheck> {
  const { rows: dangerous } = await client.query<{ name: string }>(
    `select name from unnest($1::text[]) as name where pg_has_role(current_user, name, 'MEMBER')`,
    [DANGEROUS_ROLES],
  );
  return {
    name: 'no server-file, program or all-data roles',
    ok: dangerous.length === 0,
    ...(dangerous.length
      ? {
          detail: superuser ? 'a superuser holds them all' : dangerous.map((m) => m.name).join(', '),
          fix: superuser
            ? `ALTER ROLE ${role} NOSUPERUSER;`
            : dangerous.map((m) => `REVOKE ${m.name} FROM ${role};`).join(' '),
        }
      : {}),
  };
}
