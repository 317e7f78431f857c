/**
 * Whether a connection reaches PostgreSQL through a pooler such as PgBouncer. PostgreSQL announces
 * its backend's pid in BackendKeyData when a connection opens; a pooler announces a key of its own
 * (it forwards cancels itself), so the pid the connection was given differs from pg_backend_pid().
 * Behind a pooler in transaction mode a session setting or a named prepared statement stays on a
 * server connection that other clients share, so the reader keeps both inside each call's transaction.
 */
import pg from 'pg';

/** True when the pid announced at connection differs from the backend's own: a pooler stands between. */
export async function isBehindPooler(client: pg.ClientBase): Promise<boolean> {
  const announced = (client as unknown as { processID: number | null }).processID;
  const { rows } = await client.query<[number]>({ text: 'select pg_backend_pid()', rowMode: 'array' });
  return announced !== rows[0]![0];
}

export type PoolerFinding =
  | { readonly pooled: false }
  /** `transaction`: a session setting made by one client was seen by another (transaction or statement pooling). */
  | { readonly pooled: true; readonly mode: 'transaction' | 'session' };

const PROBE_SETTING = 'querygate.pooler_probe';

/**
 * Looks at how `first` (an open connection) reaches PostgreSQL; behind a pooler, sets a session
 * value on it and asks a second connection, opened with `openSecond`, for that value: a pooler that
 * hands the server connection from one client to the next between transactions shows it (PgBouncer
 * reuses the server connection last released). The value is cleared on the connection that saw it.
 */
export async function findPooler(first: pg.ClientBase, openSecond: () => Promise<pg.Client>): Promise<PoolerFinding> {
  if (!(await isBehindPooler(first))) return { pooled: false };
  const token = `probe-${process.pid}-${Date.now()}`;
  await first.query('select set_config($1, $2, false)', [PROBE_SETTING, token]);
  const second = await openSecond();
  try {
    const { rows } = await second.query<[string | null]>({
      text: `select current_setting($1, true), set_config($1, '', false)`,
      values: [PROBE_SETTING],
      rowMode: 'array',
    });
    return { pooled: true, mode: rows[0]![0] === token ? 'transaction' : 'session' };
  } finally {
    await second.end().catch(() => undefined);
    await first.query(`select set_config($1, '', false)`, [PROBE_SETTING]).catch(() => undefined);
  }
}
