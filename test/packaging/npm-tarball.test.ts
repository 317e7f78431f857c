/**
 * The npm tarball, installed the way an MCP client's `npx querygate` gets it: into an empty folder,
 * from the registry's dependencies, with no build tools; then `npx querygate serve` over stdio on the
 * embedded database. Slow (npm install, a first start that creates and seeds the database): it runs in
 * `npm run check:packaging`, not in `npm test`.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectServes, packageJson, removeScratch, run, scratchDir } from './support.js';

let work: string | undefined;
let tarball: string;
let app: string;
let dataDir: string;

beforeAll(async () => {
  work = await scratchDir('querygate-tarball-');
  app = join(work, 'app');
  dataDir = join(work, 'data');
  await mkdir(app, { mode: 0o755 });
  // `npm pack` runs prepack and prepare: dist/ is built afresh, from nothing left over.
  await run('npm', ['pack', '--silent', '--pack-destination', work]);
  tarball = join(work, `${packageJson.name}-${packageJson.version}.tgz`);
});
afterAll(() => removeScratch(work, dataDir));

/** The sources whose compiled JavaScript the package must ship: src/, the sales pack (pack/, queries/, reports/, migrations/). */
function sources(): string[] {
  return ['src', 'pack', 'queries', 'reports', 'migrations'].flatMap((dir) =>
    readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .map((file) => `${dir}/${file}`),
  );
}

describe('the npm tarball', () => {
  it('holds the built server, its README, the docs/ pages the README links to, and package.json, nothing else', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout
      .trim()
      .split('\n')
      .map((f) => f.replace(/^package\//, ''));
    const built = sources().map((f) => `dist/${f.replace(/\.ts$/, '.js')}`);
    // The README's links to docs/ and BENCHMARKS.md resolve inside the installed package too; the screenshots stay out.
    const docs = readdirSync('docs')
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`);
    expect(files.sort()).toEqual(['README.md', 'BENCHMARKS.md', 'package.json', ...docs, ...built].sort());
    expect(built).toContain(packageJson.bin.querygate);
  });

  it('installs into an empty folder without running a build, and serves MCP with `npx querygate serve`', async () => {
    // A `tsc` that records being called: installing must not build anything (no prepare, no TypeScript).
    const tools = join(work!, 'tools');
    await mkdir(tools);
    await writeFile(join(tools, 'tsc'), `#!/bin/sh\ntouch "${tools}/tsc-ran"\nexit 1\n`, { mode: 0o755 });
    const { stderr } = await run('npm', ['install', '--no-audit', '--no-fund', tarball], {
      cwd: app,
      env: { ...process.env, PATH: `${tools}:${process.env.PATH ?? ''}` },
    });
    expect(stderr).not.toMatch(/EBADENGINE/); // no dependency refuses this Node
    expect(existsSync(join(tools, 'tsc-ran'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'typescript'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', '.bin', 'querygate'))).toBe(true);

    await expectServes(
      { command: 'npx', args: ['--no', 'querygate', 'serve'], cwd: app, env: { QUERYGATE_DATA_DIR: dataDir } },
      dataDir,
      { timeZone: 'UTC' },
    );
  });
});
