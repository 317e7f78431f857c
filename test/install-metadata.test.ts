/**
 * What the install channels say about the server agrees with the server: `server.json` (the MCP
 * Registry) is valid under the registry's schema, and names this package, its version, and only
 * environment variables the server reads, with defaults that change nothing. The installs themselves
 * are checked by `npm run check:packaging`.
 */
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
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

const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;
const pkg = readJson<{
  name: string;
  version: string;
  mcpName: string;
}>('package.json');
const serverJson = readJson<ServerJson>('server.json');
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
