import { noneFound, type ReaderUnderCheck, type SafetyCheck } from './check.js';

/** The catalog functions that read the server's files or act as an admin, which PUBLIC may have been granted. */
export async function noAdminFunctions({ client, role, superuser }: ReaderUnderCheck): Promise<SafetyCheck> {
  const { rows: functions } = await client.query<{ fn: string }>(
    `select p.oid::regprocedure::text as fn from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'pg_catalog'
        and p.proname in ('pg_read_file', 'pg_read_binary_file', 'pg_ls_dir', 'pg_stat_file', 'lo_import', 'lo_export',
                          'pg_ls_logdir', 'pg_ls_waldir', 'pg_ls_tmpdir', 'pg_ls_archive_statusdir', 'pg_reload_conf',
                          'pg_rotate_logfile')
        and has_function_privilege(p.oid, 'EXECUTE')
      order by 1`,
  );
  return noneFound(
    'cannot call file-reading or admin functions',
    superuser ? [] : functions.map((f) => f.fn),
    (fn) => `REVOKE EXECUTE ON FUNCTION ${fn} FROM PUBLIC, ${role};`,
  );
}
