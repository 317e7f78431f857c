import type { TestProject } from 'vitest/node';
import { startTestDatabase, type TestDatabase } from './database.js';

declare module 'vitest' {
  export interface ProvidedContext {
    adminUrl: string;
    readerUrl: string;
    /** The job role's URL: the job store in the shared database. */
    jobsUrl: string;
    /** Each pack's reader in the shared database, by pack name (see database.ts). */
    packReaderUrls: Record<string, string>;
    databaseKind: string;
  }
}

/**
 * Vitest runs the global setup once per project (fast, slow), each loading this module afresh; the
 * test database is started once per run all the same, kept on `globalThis` of the one main process,
 * and stopped when the last project is done with it.
 */
interface Shared {
  database: Promise<TestDatabase>;
  users: number;
}
const key = Symbol.for('querygate.test-database');
const holder = globalThis as { [key]?: Shared };

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const first = holder[key] === undefined;
  const shared = (holder[key] ??= { database: startTestDatabase(), users: 0 });
  shared.users += 1;
  const database = await shared.database;
  project.provide('adminUrl', database.adminUrl);
  project.provide('readerUrl', database.readerUrl);
  project.provide('jobsUrl', database.jobsUrl);
  project.provide('packReaderUrls', { ...database.packReaderUrls });
  project.provide('databaseKind', database.kind);
  if (first) process.stderr.write(`test database: ${database.kind}\n`);
  return async () => {
    shared.users -= 1;
    if (shared.users > 0) return;
    delete holder[key];
    await database.stop();
  };
}
