import type pg from 'pg';
import { findPooler } from '../pooler.js';
import type { SafetyCheck } from './check.js';
import { connectAsRole } from './role-connection.js';

/** Says how the reader reaches PostgreSQL, and what querygate does differently behind a pooler. */
export async function poolerCheck(client: pg.Client, url: string): Promise<SafetyCheck> {
  const finding = await findPooler(client, () => connectAsRole(url));
  return {
    name: 'how the reader reaches PostgreSQL',
    ok: true,
    detail: !finding.pooled
      ? 'directly'
      : `through a pooler in ${finding.mode} mode (the backend pid is not the one the connection announced): ` +
        'each call runs in a READ ONLY transaction of its own that sets its limits with SET LOCAL, with unnamed ' +
        'statements, so that no setting or statement outlives the call on a server connection others share',
  };
}
