import pg from 'pg';

/**
 * One plain connection as the role checked, without the startup parameters the server adds, so that
 * the role's own settings are what is checked.
 */
export async function connectAsRole(url: string): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: url,
    application_name: 'querygate-doctor',
    connectionTimeoutMillis: 5000,
    // Client-side, so that the role's own statement_timeout is still what the checks read: a stalled
    // database fails the check (serve retries it) instead of holding start-up for ever.
    query_timeout: 15_000,
  });
  await client.connect();
  return client;
}
