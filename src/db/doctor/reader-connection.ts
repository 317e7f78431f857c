import type { ReaderDatabase } from '../connect.js';
import type { SafetyCheck } from './check.js';

/** The name of the check that the server's own reader connection (its startup parameters, its limits) opens. */
export const READER_CONNECTION_CHECK = "the server's reader connection opens";

/**
 * Opens a connection of the server's reader pool and runs one statement on it: the role's checks
 * use a plain connection, and a pooler may accept that one and refuse the server's startup parameters.
 */
export async function readerConnectionCheck(reader: ReaderDatabase): Promise<SafetyCheck> {
  try {
    await reader.execute({ sql: 'select 1', parameters: [] });
    return { name: READER_CONNECTION_CHECK, ok: true };
  } catch (err) {
    return {
      name: READER_CONNECTION_CHECK,
      ok: false,
      detail: `failed: ${err instanceof Error ? err.message : String(err)}`,
      fix: 'behind PgBouncer (session or transaction mode): ignore_startup_parameters = statement_timeout, idle_in_transaction_session_timeout, options',
    };
  }
}
