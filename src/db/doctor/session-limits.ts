import type { ReaderUnderCheck, SafetyCheck } from './check.js';

/** The role's own settings that make each session read-only and bound its statements and idle transactions. */
export async function sessionLimits({ client, role }: ReaderUnderCheck): Promise<SafetyCheck[]> {
  const checks: SafetyCheck[] = [];
  const setting = async (name: string): Promise<string> =>
    (await client.query<{ value: string }>('select current_setting($1) as value', [name])).rows[0]!.value;
  const readOnly = await setting('default_transaction_read_only');
  checks.push({
    name: 'default_transaction_read_only = on',
    ok: readOnly === 'on',
    ...(readOnly !== 'on'
      ? { detail: `is ${readOnly}`, fix: `ALTER ROLE ${role} SET default_transaction_read_only = on;` }
      : {}),
  });
  const timeoutMs = Number(
    (await client.query<{ ms: string }>(`select setting as ms from pg_settings where name = 'statement_timeout'`))
      .rows[0]!.ms,
  );
  checks.push({
    name: 'statement_timeout is set, at most 60 s',
    ok: timeoutMs > 0 && timeoutMs <= 60_000,
    detail: timeoutMs === 0 ? 'is 0 (none)' : `is ${await setting('statement_timeout')}`,
    ...(timeoutMs === 0 || timeoutMs > 60_000 ? { fix: `ALTER ROLE ${role} SET statement_timeout = '5s';` } : {}),
  });
  const idle = await setting('idle_in_transaction_session_timeout');
  checks.push({
    name: 'idle_in_transaction_session_timeout is set',
    ok: idle !== '0',
    ...(idle === '0'
      ? { detail: 'is 0 (none)', fix: `ALTER ROLE ${role} SET idle_in_transaction_session_timeout = '10s';` }
      : {}),
  });
  return checks;
}
