import type { TestProject } from 'vitest/node';
import { startTestDatabase } from './database.js';

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

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const database = await startTestDatabase();
  project.provide('adminUrl', database.adminUrl);
  project.provide('readerUrl', database.readerUrl);
  project.provide('jobsUrl', database.jobsUrl);
  project.provide('packReaderUrls', { ...database.packReaderUrls });
  project.provide('databaseKind', database.kind);
  process.stderr.write(`test database: ${database.kind}\n`);
  return () => database.stop();
}
