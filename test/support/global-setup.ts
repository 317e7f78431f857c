import type { TestProject } from 'vitest/node';
import { startTestDatabase } from './database.js';

declare module 'vitest' {
  export interface ProvidedContext {
    adminUrl: string;
    readerUrl: string;
    databaseKind: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const database = await startTestDatabase();
  project.provide('adminUrl', database.adminUrl);
  project.provide('readerUrl', database.readerUrl);
  project.provide('databaseKind', database.kind);
  process.stderr.write(`test database: ${database.kind}\n`);
  return () => database.stop();
}
