/**
 * The embedded database's port: QUERYGATE_EMBEDDED_PORT for `serve` and the CLI (checked when the
 * configuration is read, a taken one refused before initdb), and QUERYGATE_TEST_PORTS, the range the
 * tests' clusters and peers take their ports from, each claimed so that parallel workers never share one.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { salesPack } from '../pack/index.js';
import { loadConfig } from '../src/config.js';
import { startEmbedded } from '../src/db/embedded.js';
import { silentLogger } from '../src/lib/logger.js';
import { CLI } from './support/cli.js';
import { claimTestPort, testPortRange } from './support/ports.js';

let holder: Server;
let takenPort: number;
let scratch: string;

beforeAll(async () => {
  holder = createServer();
  await new Promise<void>((listening) => holder.listen(0, '127.0.0.1', listening));
  takenPort = (holder.address() as { port: number }).port;
  scratch = mkdtempSync(join(tmpdir(), 'querygate-ports-'));
  chmodSync(scratch, 0o755); // as root, postgres runs as the postgres user and must enter it
});
afterAll(async () => {
  await new Promise((closed) => holder.close(closed));
  rmSync(scratch, { recursive: true, force: true });
});

describe('QUERYGATE_EMBEDDED_PORT', () => {
  it('is read as a port from 1024 to 65535, and unset leaves the choice free', () => {
    expect(loadConfig({ QUERYGATE_EMBEDDED_PORT: '54321' }).embeddedPort).toBe(54321);
    expect(loadConfig({}).embeddedPort).toBeUndefined();
    for (const bad of ['80', '1023', '65536', 'abc', '5432.5', '-1']) {
      expect(() => loadConfig({ QUERYGATE_EMBEDDED_PORT: bad }), bad).toThrow(
        /^QUERYGATE_EMBEDDED_PORT: must be a whole number from 1024 to 65535 \(or unset, to choose a free port\)$/,
      );
    }
  });

  it('a taken port stops the embedded database before initdb, in one line with the fix', async () => {
    const dataDir = join(scratch, 'embedded');
    await expect(
      startEmbedded({ dataDir, port: takenPort, readerRole: 'querygate_reader', packs: [salesPack] }, silentLogger),
    ).rejects.toThrow(
      new RegExp(`^QUERYGATE_EMBEDDED_PORT: port ${takenPort} on 127\\.0\\.0\\.1 is taken; stop what listens there`),
    );
  });

  it('the CLI gives the taken port in one line and exits 2', () => {
    const run = spawnSync(process.execPath, [CLI, 'migrate'], {
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        QUERYGATE_DATA_DIR: join(scratch, 'cli'),
        QUERYGATE_EMBEDDED_PORT: String(takenPort),
      },
    });
    expect(run.stderr).toMatch(
      new RegExp(`^querygate: QUERYGATE_EMBEDDED_PORT: port ${takenPort} on 127\\.0\\.0\\.1 is taken; [^\\n]+\\n$`),
    );
    expect(run.status).toBe(2);
    const bad = spawnSync(process.execPath, [CLI, 'migrate'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, QUERYGATE_EMBEDDED_PORT: '99' },
    });
    expect(bad.stderr).toBe(
      'querygate: QUERYGATE_EMBEDDED_PORT: must be a whole number from 1024 to 65535 (or unset, to choose a free port)\n',
    );
    expect(bad.status).toBe(2);
  });
});

describe('QUERYGATE_TEST_PORTS', () => {
  it('is low-high within 1024..65535, and refused otherwise in one line naming the rule', () => {
    expect(testPortRange({})).toBeUndefined();
    expect(testPortRange({ QUERYGATE_TEST_PORTS: '54000-54099' })).toEqual({ low: 54000, high: 54099 });
    for (const bad of ['54000', '80-90', '54099-54000', '60000-70000', 'a-b']) {
      expect(() => testPortRange({ QUERYGATE_TEST_PORTS: bad }), bad).toThrow(
        /^QUERYGATE_TEST_PORTS: ".+" must be low-high, two whole numbers from 1024 to 65535 with low <= high/,
      );
    }
  });

  it('hands out each port of the range once, passes over a taken one, and takes over a dead claim', async () => {
    const claims = mkdtempSync(join(scratch, 'claims-'));
    const low = takenPort; // held by `holder`: passed over
    const env = { QUERYGATE_TEST_PORTS: `${low}-${low + 3}` };
    writeFileSync(join(claims, String(low + 1)), String(process.pid)); // a live claim: not ours to take
    writeFileSync(join(claims, String(low + 2)), '2147483646'); // a claimer long gone
    const ports = await Promise.all([claimTestPort(env, claims), claimTestPort(env, claims)]);
    // low + 2 (the dead claim) and low + 3 are the only ones left, unless something else holds one.
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) expect([low + 2, low + 3]).toContain(port);
    await expect(claimTestPort(env, claims)).rejects.toThrow(
      new RegExp(`^QUERYGATE_TEST_PORTS: every port of ${low}-${low + 3} is claimed or taken; widen the range`),
    );
  });

  it('unset, any free port', async () => {
    const port = await claimTestPort({});
    expect(port).toBeGreaterThan(0);
  });
});
