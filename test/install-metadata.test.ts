/**
 * What the install channels say about the server agrees with the server: `server.json` (the MCP
 * Registry) is valid under the registry's schema, and it and `mcpb/manifest.json` (the desktop bundle)
 * name this package, its version, its tools, and only environment variables the server reads, with
 * defaults that change nothing. The installs themselves are checked by `npm run check:packaging`.
 */
import { readFileSync, statSync } from 'node:fs';
import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { templates } from '../queries/index.js';
import { loadConfig } from '../src/config.js';

interface EnvironmentVariable {
  name: string;
  default?: string;
  choices?: string[];
}
interface ServerJson {
  $schema: string;
  name: string;
  version: string;
  description: string;
  packages: {
    registryType: string;
    identifier: string;
    version: string;
    transport: { type: string };
    packageArguments?: { type: string; value?: string }[];
    environmentVariables: EnvironmentVariable[];
  }[];
}
interface Manifest {
  name: string;
  version: string;
  server: {
    type: string;
    entry_point: string;
    mcp_config: { command: string; args: string[]; env: Record<string, string> };
  };
  tools: { name: string; description: string }[];
  user_config: Record<string, { default?: string; required?: boolean; sensitive?: boolean }>;
  compatibility: { platforms: string[]; runtimes: { node: string } };
}

const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;
const pkg = readJson<{
  name: string;
  version: string;
  mcpName: string;
  bin: Record<string, string>;
  files: string[];
  engines: { node: string };
}>('package.json');
const serverJson = readJson<ServerJson>('server.json');
const manifest = readJson<Manifest>('mcpb/manifest.json');
const schema = readJson<{ $id: string }>('test/fixtures/mcp-registry/server.schema.json');

const ajv = new Ajv({ allErrors: true });
ajv.addKeyword('example'); // an annotation the registry's schema uses; JSON Schema draft-07 has `examples`
formats.default(ajv);
const validateServerJson = ajv.compile(schema);

/** The environment variables the server's configuration reads, as it reads them. */
function variablesRead(): Set<string> {
  const read = new Set<string>();
  const recording = new Proxy({} as NodeJS.ProcessEnv, {
    get: (_target, key) => {
      if (typeof key === 'string') read.add(key);
      return undefined;
    },
  });
  loadConfig(recording);
  return read;
}

describe('server.json, for the MCP Registry', () => {
  const [npm] = serverJson.packages;

  it('is valid under the registry schema it names', () => {
    expect(serverJson.$schema).toBe(schema.$id);
    expect(validateServerJson(serverJson), JSON.stringify(validateServerJson.errors)).toBe(true);
  });

  it('would be refused by that schema with a registry error in it', () => {
    const broken = structuredClone(serverJson);
    broken.description = 'x'.repeat(101);
    broken.packages[0]!.version = 'latest';
    expect(validateServerJson(broken)).toBe(false);
    expect(validateServerJson.errors?.map((e) => e.instancePath)).toEqual(
      expect.arrayContaining(['/description', '/packages/0/version']),
    );
  });

  it('has a bin that runs from a clone: `npx querygate` inside it finds dist/src/cli.js executable', () => {
    // npm marks a dependency's bin executable when it installs it, but not the clone's own: the build does.
    expect((pkg as { bin: Record<string, string> }).bin.querygate).toBe('dist/src/cli.js');
    expect(statSync('dist/src/cli.js').mode & 0o111).toBe(0o111);
  });

  it('is named by package.json and names this npm package and version, run over stdio', () => {
    expect(pkg.mcpName).toMatch(/^io\.github\.[A-Za-z0-9-]+\/[A-Za-z0-9._-]+$/);
    expect(serverJson.name).toBe(pkg.mcpName);
    expect(serverJson.version).toBe(pkg.version);
    expect(serverJson.packages).toHaveLength(1);
    expect(npm).toMatchObject({
      registryType: 'npm',
      identifier: pkg.name,
      version: pkg.version,
      transport: { type: 'stdio' },
      packageArguments: [{ type: 'positional', value: 'serve' }],
    });
  });

  it('names only environment variables the server reads, with defaults and choices it takes', () => {
    const read = variablesRead();
    const unchanged = loadConfig({});
    for (const variable of npm!.environmentVariables) {
      expect(read, variable.name).toContain(variable.name);
      if (variable.default !== undefined) {
        expect(loadConfig({ [variable.name]: variable.default }), variable.name).toEqual(unchanged);
      }
      for (const choice of variable.choices ?? []) {
        expect(() => loadConfig({ [variable.name]: choice }), `${variable.name}=${choice}`).not.toThrow();
      }
    }
    expect(npm!.environmentVariables.map((v) => v.name)).toContain('DATABASE_URL');
  });
});

describe('mcpb/manifest.json, for desktop clients', () => {
  const { mcp_config: launch } = manifest.server;

  it('names this package and version, and launches its built CLI with serve', () => {
    expect(manifest.name).toBe(pkg.name);
    expect(manifest.version).toBe(pkg.version);
    expect(manifest.server.type).toBe('node');
    expect(manifest.server.entry_point).toBe(pkg.bin.querygate);
    expect(pkg.files).toContain('dist/src');
    expect(launch.command).toBe('node');
    expect(launch.args).toEqual([`\${__dirname}/${manifest.server.entry_point}`, 'serve']);
    expect(manifest.compatibility.runtimes.node).toBe(pkg.engines.node);
  });

  it('lists the tools the server offers', () => {
    expect(manifest.tools).toEqual(templates.map((t) => ({ name: t.name, description: t.title })));
  });

  it('passes each setting to a variable the server reads, whose default changes nothing', () => {
    const read = variablesRead();
    const unchanged = loadConfig({});
    const used = new Set<string>();
    for (const [name, value] of Object.entries(launch.env)) {
      expect(read, name).toContain(name);
      const key = /^\$\{user_config\.([a-z_]+)\}$/.exec(value)?.[1];
      expect(key, `${name}: ${value}`).toBeDefined();
      const setting = manifest.user_config[key!];
      expect(setting, key).toBeDefined();
      // A desktop client leaves a setting's placeholder in place when it has no value, so every optional
      // setting needs a default; an empty DATABASE_URL means the built-in database.
      expect(setting!.default, key).toBeDefined();
      expect(loadConfig({ [name]: setting!.default }), name).toEqual(unchanged);
      used.add(key!);
    }
    expect([...used].sort()).toEqual(Object.keys(manifest.user_config).sort());
    expect(launch.env.DATABASE_URL).toBe('${user_config.database_url}');
    expect(manifest.user_config.database_url).toMatchObject({ sensitive: true, required: false, default: '' });
  });
});
