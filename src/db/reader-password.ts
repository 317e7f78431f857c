/**
 * Sets a role's password (the reader's, the job role's) as a SCRAM-SHA-256 verifier computed here, so the clear-text
 * password never appears in SQL text or in the database's logs.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import type pg from 'pg';

const ITERATIONS = 4096;

export function scramVerifier(password: string, salt: Buffer = randomBytes(16)): string {
  const salted = pbkdf2Sync(password.normalize('NFKC'), salt, ITERATIONS, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${ITERATIONS}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

export async function setRolePassword(admin: pg.Client, role: string, password: string): Promise<void> {
  // ALTER ROLE takes no bind parameters; the verifier is base64 and '$' only, and the role name is
  // a validated identifier, escaped all the same.
  const verifier = scramVerifier(password);
  await admin.query(`alter role ${admin.escapeIdentifier(role)} password ${admin.escapeLiteral(verifier)}`);
}
