/**
 * Every suite runs in exactly one project: `fast` (`npm test`) or `slow` (`npm run test:all` adds it),
 * so that moving a file to the slow list, or a new file, can never drop it from both.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect, it } from 'vitest';
import { createVitest } from 'vitest/node';
import { SHIPPED_PACK_FOLDERS } from './support/pack-suites.js';
import { SLOW_SUITES } from './support/suites.js';

const root = join(import.meta.dirname, '..');

/** The engine's suites, and those of the shipped packs in their own folders (examples/<pack>/test/). */
function suitesOnDisk(): string[] {
  const packFolders = SHIPPED_PACK_FOLDERS.map((folder) => `${folder}/test`);
  return ['test', ...packFolders]
    .filter((folder) => existsSync(join(root, folder)))
    .flatMap((folder) =>
      readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' }).map((file) => `${folder}/${file}`),
    )
    .filter((file) => file.endsWith('.test.ts') && !file.startsWith('test/packaging/'))
    .sort();
}

it('puts every test file in exactly one of the fast and slow projects', async () => {
  // Vitest's own globbing, as a run would do it; nothing is started (no global setup, no workers).
  const vitest = await createVitest('test', { watch: false, config: join(root, 'vitest.config.ts') }, {});
  try {
    const byProject = new Map<string, string[]>();
    for (const spec of await vitest.globTestSpecifications()) {
      const files = byProject.get(spec.project.name) ?? [];
      files.push(relative(root, spec.moduleId));
      byProject.set(spec.project.name, files);
    }
    expect([...byProject.keys()].sort()).toEqual(['fast', 'slow']);
    const fast = byProject.get('fast')!;
    const slow = byProject.get('slow')!;
    expect(fast.filter((file) => slow.includes(file))).toEqual([]);
    // A user's pack named in QUERYGATE_PACKS brings its own <folder>/test/ into fast; the repository's are these.
    const ours = (file: string): boolean =>
      file.startsWith('test/') || SHIPPED_PACK_FOLDERS.some((folder) => file.startsWith(`${folder}/`));
    expect([...fast, ...slow].filter(ours).sort()).toEqual(suitesOnDisk());
    expect([...slow].sort()).toEqual([...SLOW_SUITES].sort());
    expect(fast).toContain('test/contract.test.ts');
    expect(fast).toContain('examples/support-desk/test/support-desk.test.ts');
  } finally {
    await vitest.close();
  }
});
