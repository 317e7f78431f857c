/**
 * The packs and database the contract suite and the scaffolded end-to-end tests run against: every
 * pack of ALL_PACKS on the shared test database; or, with QUERYGATE_PACKS set, those packs (loaded as
 * `serve` loads them) on your own database, read as DATABASE_URL (the reader the migrations made) and
 * counted independently through ADMIN_DATABASE_URL (the reader when unset), with ranges ending yesterday.
 */
import pg from 'pg';
import { inject } from 'vitest';
import { yesterdayUtc } from '../../src/lib/date-range.js';
import type { Pack } from '../../src/pack.js';
import { loadPacks } from '../../src/packs.js';
import { TEST_SEED } from './database.js';
import { ALL_PACKS, readerUrlFor } from './packs.js';

export interface Target {
  /** True when the packs are yours (QUERYGATE_PACKS), on your database. */
  readonly own: boolean;
  readonly packs: readonly Pack[];
  /** The reader of a pack. */
  readerUrl(pack: Pack): string;
  /** The reader of the pack that holds a template. */
  readerUrlOf(templateName: string): string;
  /** An admin connection, in UTC as the reader's connections run. */
  connectAdmin(): Promise<pg.Client>;
  /** The last day with data: the widest calls end on it. */
  readonly lastDay: string;
}

export async function testTarget(): Promise<Target> {
  const specs = process.env.QUERYGATE_PACKS;
  const own = specs !== undefined && specs !== '';
  const readerUrl = own ? process.env.DATABASE_URL : undefined;
  if (own && !readerUrl) throw new Error('QUERYGATE_PACKS is set: set DATABASE_URL to the reader of your database too');
  const packs = own ? await loadPacks(specs.split(',').map((s) => s.trim())) : ALL_PACKS;
  const readerOf = (pack: Pack): string => readerUrl ?? readerUrlFor(pack);
  const adminUrl = own ? (process.env.ADMIN_DATABASE_URL ?? readerUrl!) : inject('adminUrl');
  return {
    own,
    packs,
    readerUrl: readerOf,
    readerUrlOf: (name) => {
      const pack = packs.find((p) => p.templates.some((t) => t.name === name));
      if (!pack) {
        throw new Error(
          own
            ? `no pack of QUERYGATE_PACKS has a template ${name}; add it to its pack's queries/index.ts and build`
            : `no pack of the test database has a template ${name}: npm test runs over ALL_PACKS (test/support/packs.ts). ` +
                'Run this test against your database: QUERYGATE_PACKS=<your pack> DATABASE_URL=<its reader> ' +
                'ADMIN_DATABASE_URL=<an admin> npx vitest run <this file> (docs/your-own-database.md, step 9)',
        );
      }
      return readerOf(pack);
    },
    connectAdmin: async () => {
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query("set time zone 'UTC'");
      return admin;
    },
    lastDay: own ? yesterdayUtc() : TEST_SEED.until,
  };
}
