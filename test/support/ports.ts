/**
 * The ports the tests give the clusters they start: free ones, or, with QUERYGATE_TEST_PORTS=low-high,
 * ones inside that range for machines that must stay inside one. Within a range each port is claimed
 * by a file created exclusively (`wx`) under the OS temp folder and holding the claimer's pid, so that
 * parallel workers and the global setup never hand out the same port; a claim whose process is gone
 * is taken over.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface PortRange {
  readonly low: number;
  readonly high: number;
}

/** QUERYGATE_TEST_PORTS parsed, or undefined when unset; throws one line naming the variable and the rule. */
export function testPortRange(env: NodeJS.ProcessEnv = process.env): PortRange | undefined {
  const raw = env.QUERYGATE_TEST_PORTS?.trim();
  if (!raw) return undefined;
  const match = /^(\d+)-(\d+)$/.exec(raw);
  const low = Number(match?.[1]);
  const high = Number(match?.[2]);
  if (!match || low < 1024 || high > 65535 || low > high) {
    throw new Error(
      `QUERYGATE_TEST_PORTS: "${raw}" must be low-high, two whole numbers from 1024 to 65535 with low <= high (e.g. 54000-54099)`,
    );
  }
  return { low, high };
}

/** A port for a cluster or peer a test starts: claimed inside QUERYGATE_TEST_PORTS, or any free one. */
export async function claimTestPort(
  env: NodeJS.ProcessEnv = process.env,
  claims: string = join(tmpdir(), 'querygate-test-ports'),
): Promise<number> {
  const range = testPortRange(env);
  if (!range) return listenAndClose(0);
  mkdirSync(claims, { recursive: true });
  for (let port = range.low; port <= range.high; port++) {
    if (!claim(join(claims, String(port)))) continue;
    // A port something outside the tests holds stays claimed (by us) and is passed over.
    if ((await listenAndClose(port).catch(() => undefined)) === port) return port;
  }
  throw new Error(
    `QUERYGATE_TEST_PORTS: every port of ${range.low}-${range.high} is claimed or taken; widen the range, or remove ${claims} when no test runs`,
  );
}

function claim(file: string): boolean {
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
    return true;
  } catch {
    if (alive(Number(readFileSync(file, 'utf8')))) return false;
    rmSync(file, { force: true }); // its process is gone; two takers race on the exclusive create below
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return true;
    } catch {
      return false;
    }
  }
}

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function listenAndClose(port: number): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => done(bound));
    });
  });
}
