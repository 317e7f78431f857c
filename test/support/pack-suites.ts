/**
 * Which packs `npm test` serves and where their tests are: the sales pack, every pack under
 * examples/ (examples/support-desk, a user's pack scaffolded there), and every pack named in QUERYGATE_PACKS or the configuration file
 * (QUERYGATE_CONFIG), read as `serve` reads them. A pack's tests live in its own folder, `<pack>/test/`,
 * so a user's pack joins the suite without an edit outside that folder: vitest.config.ts includes
 * packTestGlobs(), and the global setup migrates and seeds every pack of servedPackSpecs().
 *
 * Light on purpose (node:fs, yaml): vitest.config.ts imports it before any test runs.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The pack folders besides the root (the sales pack's tests are test/ itself): every folder of
 * `examples/` with a `pack/index.ts`, where `querygate new-pack` writes one, so that a pack there is
 * in `npm test` with no setting.
 */
export const SHIPPED_PACK_FOLDERS: readonly string[] = readdirSync(join(ROOT, 'examples'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(ROOT, 'examples', entry.name, 'pack', 'index.ts')))
  .map((entry) => `examples/${entry.name}`)
  .sort();

/** The entry points of the packs of SHIPPED_PACK_FOLDERS, as sources. */
export const EXAMPLE_PACK_SPECS: readonly string[] = SHIPPED_PACK_FOLDERS.map((f) => join(ROOT, f, 'pack', 'index.ts'));

/** The names `serve` knows without a path (src/packs.ts): the tests serve them anyway. */
const SHIPPED_NAMES = new Set(['sales']);

/**
 * The packs QUERYGATE_PACKS or the configuration file names, as `serve` picks them (the file's packs
 * when it lists any, else QUERYGATE_PACKS): shipped names as they are, paths made absolute (a file's
 * paths from the file's folder).
 */
export function servedPackSpecs(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string[] {
  const configFile = env.QUERYGATE_CONFIG;
  if (configFile) {
    const file = resolve(cwd, configFile);
    const parsed = parse(readFileSync(file, 'utf8')) as { packs?: ({ name?: string; path?: string } | null)[] } | null;
    const entries = parsed?.packs ?? [];
    if (entries.length > 0) {
      return entries.flatMap((entry) =>
        entry?.path !== undefined ? [resolve(dirname(file), entry.path)] : entry?.name ? [entry.name] : [],
      );
    }
  }
  const specs = (env.QUERYGATE_PACKS ?? '')
    .split(',')
    .map((spec) => spec.trim())
    .filter((spec) => spec !== '');
  return specs.map((spec) => (SHIPPED_NAMES.has(spec) || isAbsolute(spec) ? spec : resolve(cwd, spec)));
}

/**
 * The source folder of the pack a module path points at: the folder above its `pack/` (pack/index.ts
 * or .js), mapped from dist/ back to the sources when the module is a compiled one of this clone.
 */
export function packFolder(modulePath: string): string {
  const folder = dirname(dirname(modulePath));
  const fromDist = relative(join(ROOT, 'dist'), folder);
  return fromDist.startsWith('..') || isAbsolute(fromDist) ? folder : join(ROOT, fromDist);
}

/**
 * The test globs for vitest's `include`, beside test/**: each shipped pack's `<folder>/test/`, then
 * the `test/` folder of every pack named in QUERYGATE_PACKS or the configuration file.
 */
export function packTestGlobs(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string[] {
  const folders = new Set<string>([ROOT, ...SHIPPED_PACK_FOLDERS.map((folder) => join(ROOT, folder))]);
  const globs = SHIPPED_PACK_FOLDERS.map((folder) => `${folder}/test/**/*.test.ts`);
  for (const spec of servedPackSpecs(env, cwd)) {
    if (SHIPPED_NAMES.has(spec)) continue;
    const folder = packFolder(spec);
    if (folders.has(folder) || !existsSync(join(folder, 'test'))) continue;
    folders.add(folder);
    globs.push(`${folder.split(sep).join('/')}/test/**/*.test.ts`);
  }
  return globs;
}
